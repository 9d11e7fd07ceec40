"""Every attention map of one translation, as plain JSON-ready data.

Used by the explorer (`python -m nmt.explore`) and by
`python -m nmt.translate --attention-html`, so both show the same maps.

The model is run teacher-forced on its own output (bos + output ids), which
gives the weights the search used at every step, for every layer and head:

    cross   rows = output subwords (ending "</s>"), columns = source subwords
            Transformer: (L, H, T, S); RNN decoders: one map, plus local-p's
            centres p_t and window half-width D
    encoder self-attention (Transformer encoders)   (L, H, S, S); an LSTMN
            encoder's intra-attention (1, 1, S, S), columns "<start>" and
            the source subwords before the row's
    decoder self-attention (Transformer decoders)   (L, H, T, T), rows and
            columns the decoder's inputs: "<s>" then the output subwords
    coverage (coverage attention, RNN decoders)     (1, 1, T, S), row t the
            coverage vector c_t the score saw (`value_name`, `legend`)

A map is a dict: name, title, row/column labels and axis names, `layers`
nested lists [L][H][rows][cols] rounded to 4 decimals (a weight that is not
0 never rounds to 0), `center`, `window`, `mask` ("causal" where row r
attends columns 0..r only: the other cells are drawn masked, see
nmt.viz.colour_scale) and `exact_zeros`: whether a weight
of 0 is a real zero that pictures draw white (a sparse normaliser, see
`sparse`), or a softmax weight too small for float32, drawn as the scale's
lowest colour, so that it never looks like a hole in the map.
"""

import inspect

import numpy as np
import torch

from nmt.base.errors import NmtError
from nmt.viz.colour_scale import CAUSAL
from nmt.viz.unknown_share import UNKNOWN, UNKNOWN_SHARE, unknown_source, unknown_text, warn_unknown  # noqa: F401

BOS = 2
DIGITS = 4
SPARSE_NORMALISERS = ("sparsemax", "entmax15")


def sparse(module) -> bool:
    """Whether attention inside `module` (a decoder, an encoder, a model) is
    normalised by sparsemax or 1.5-entmax, which give weights of exactly 0.
    Softmax never does: its zeros are float32 underflow (exp(-104) and
    below), which pictures must not draw as holes."""
    return any(getattr(m, "normaliser", None) in SPARSE_NORMALISERS for m in module.modules())


def exact_zeros(translator) -> bool:
    """Whether a 0 in the cross-attention of `translator` (every member of an
    ensemble) is a real zero, to be drawn white. An engine without the
    model at hand (CTranslate2, which exports softmax attention only) has none."""
    models = [getattr(member, "model", None) for member in translator.members]
    return all(model is not None and sparse(model.decoder) for model in models)


def _rounded(array) -> list:
    """Rounded to DIGITS decimals, except that a weight that is not 0 stays
    not 0 (1e-7 is kept as it is): the page draws exactly 0 white, which
    must mean a weight of exactly 0 (sparsemax, entmax15, a mask), never a
    small softmax weight rounded away."""
    values = np.asarray(array, dtype=np.float64)
    rounded = np.round(values, DIGITS)
    tiny = (rounded == 0) & (values != 0)
    return np.where(tiny, np.asarray(array, dtype=np.float32).astype(np.float64), rounded).tolist()


def _takes(module, name: str) -> bool:
    """Whether module.forward accepts keyword `name` (self_weights)."""
    return name in inspect.signature(module.forward).parameters


def describe(translator) -> str:
    """A one-line summary of a model's parts, e.g. 'TransformerEncoder ->
    RNNDecoder (lstm, luong) with GeneralAttention (local_p, D=5)'; a
    translator of another kind (a Hugging Face model) says its own."""
    if hasattr(translator, "describe"):
        return translator.describe()
    model = translator.model
    decoder = model.decoder
    text = f"{type(model.encoder).__name__} -> {type(decoder).__name__}"
    if hasattr(decoder, "cell") and hasattr(decoder, "style"):
        text += f" ({decoder.cell}, {decoder.style})"
    attention = getattr(decoder, "attention", None)
    if isinstance(attention, torch.nn.Module):
        details = [str(getattr(attention, "scope"))] if hasattr(attention, "scope") else []
        if getattr(attention, "window", None) is not None and "local" in "".join(details):
            details.append(f"D={attention.window}")
        text += f" with {type(attention).__name__}" + (f" ({', '.join(details)})" if details else "")
    elif hasattr(decoder, "layers") and isinstance(decoder.layers, torch.nn.ModuleList):
        heads = decoder.layers[0].cross_attn.heads if len(decoder.layers) else 0
        text += f" ({len(decoder.layers)} layers, {heads} heads)"
    return text


def check_source(translator, text: str) -> str:
    """The text to translate, stripped; NmtError when empty or too long."""
    if text is not None and not isinstance(text, str):
        raise NmtError(f"the source sentence must be text, not {type(text).__name__} {text!r:.40}")
    text = (text or "").strip()
    if not text:
        raise NmtError("the source sentence is empty; type or paste a sentence to translate")
    if "\n" in text:
        raise NmtError("give one sentence on one line (the text has line breaks)")
    n = len(translator.tokenizer.encode_src(text))
    if n > translator.max_src_len:
        raise NmtError(f"the sentence has {n} subwords but this model takes at most "
                       f"{translator.max_src_len}; shorten it")
    return text


def _map(name, title, rows, cols, row_axis, col_axis, layers, center=None, window=None,
         zeros: bool = False, mask: str | None = None) -> dict:
    """layers (L, H, R, C) -> one map (see the module docstring); `mask`
    "causal": row r attends columns 0..r only, the others are drawn masked
    (nmt.viz.colour_scale)."""
    return {"name": name, "title": title, "rows": rows, "cols": cols,
            "row_axis": row_axis, "col_axis": col_axis, "layers": _rounded(layers),
            "center": None if center is None else _rounded(center),
            "window": None if window is None else int(window), "exact_zeros": bool(zeros), "mask": mask}


@torch.no_grad()
def teacher_forced(translator, source: str, tokens, decoder_self: list | None = None):
    """Run translator's model on bos + `tokens` (its own output for `source`)
    with need_weights -> (DecoderOutput, src (1, S), Encoded). A list given as
    `decoder_self` collects a Transformer decoder's self-attention."""
    model = translator.model
    src, _, _ = translator._encode([source])                         # (1, S)
    tgt_in = torch.tensor([[BOS] + list(tokens)], device=src.device)  # (1, T)
    enc = model.encode(src)
    state = model.decoder.init_state(enc.memory, enc.init)
    extra = {} if decoder_self is None else {"self_weights": decoder_self}
    return model.decoder(tgt_in, state, enc.memory, need_weights=True, **extra), src, enc


def layers_and_centers(translator, source: str, tokens):
    """Every cross-attention layer and head (L, H, T, S) of a Transformer
    decoder, and local-p's predicted centres (T,) of an RNN one (None where
    the model has none), as numpy arrays; a translator of another kind (a
    Hugging Face model) reads its own layers."""
    if hasattr(translator, "cross_layers"):
        return translator.cross_layers(source, tokens), None
    result, _, _ = teacher_forced(translator, source, tokens)
    layers = None if result.layers is None else result.layers[0].float().cpu().numpy()   # (L, H, T, S)
    centers = None if result.center is None else result.center[0].float().cpu().numpy()  # (T,)
    return layers, centers


@torch.no_grad()
def attention_maps(translator, source: str, out) -> list[dict]:
    """All maps of Translation `out` of `source` (see the module docstring);
    a translator of another kind (a Hugging Face model) reads its own."""
    if not out.tgt_pieces:
        return []
    if hasattr(translator, "attention_maps"):
        return translator.attention_maps(source, out)
    model = translator.model
    dec_self = [] if _takes(model.decoder, "self_weights") else None
    result, src, enc = teacher_forced(translator, source, out.tokens, decoder_self=dec_self)

    S, T = len(out.src_pieces), len(out.tgt_pieces)
    decoder_zeros, encoder_zeros = sparse(model.decoder), sparse(model.encoder)
    inputs = ["<s>"] + out.tgt_pieces[:-1]
    maps = []
    if result.layers is not None:
        layers = result.layers[0].float().cpu()[:, :, :T, :S]        # (L, H, T, S)
        maps.append(_map("cross", "cross-attention (decoder -> source)", out.tgt_pieces,
                         out.src_pieces, "target", "source", layers, zeros=decoder_zeros))
    else:
        weights = result.weights if result.weights is not None else torch.as_tensor(out.attention)[None]
        weights = weights[0].float().cpu()[:T, :S]                   # (T, S)
        attention = getattr(model.decoder, "attention", None)
        scope = getattr(attention, "scope", None)
        center = window = None
        if result.center is not None:                                # local_p: predicted p_t
            center = result.center[0].float().cpu()[:T]              # (T,)
        elif scope == "local_m":                                     # local_m: p_t = t
            center = torch.arange(T, dtype=torch.float32)
        if center is not None:
            window = getattr(attention, "window", None)
        maps.append(_map("cross", "attention (decoder -> source)", out.tgt_pieces,
                         out.src_pieces, "target", "source", weights[None, None], center, window,
                         zeros=decoder_zeros))
        maps[-1]["scope"] = scope
        if result.coverage is not None:                              # coverage attention: c_t
            coverage = result.coverage[0].float().cpu()[:T, :S]      # (T, S)
            maps.append(_map("coverage", "coverage c_t (attention received before each step)",
                             out.tgt_pieces, out.src_pieces, "target", "source", coverage[None, None],
                             zeros=decoder_zeros))
            maps[-1]["value_name"] = "coverage"
            maps[-1]["legend"] = ("row t: c_t = a_1 + ... + a_(t-1), what each source token had "
                                  "received before target token t was chosen (Tu et al. 2016; "
                                  "See et al. 2017); the coverage loss adds sum_i min(a_t,i, c_t,i)")
    if _takes(model.encoder, "self_weights"):
        enc_self = []
        model.encoder(src, enc.memory.mask, self_weights=enc_self)
        layers = torch.stack(enc_self, 1)[0].float().cpu()[:, :, :S, :S]   # (L, H, S, S)
        if getattr(model.encoder, "attends_to_its_tape", False):    # LSTMN: over the tokens before
            maps.append(_map("encoder-self", "encoder intra-attention (LSTMN: each token over the tape "
                             "of the ones before it)", out.src_pieces, ["<start>"] + out.src_pieces[:-1],
                             "token (source)", "tape slot", layers, zeros=encoder_zeros, mask=CAUSAL))
        else:
            maps.append(_map("encoder-self", "encoder self-attention", out.src_pieces,
                             out.src_pieces, "query (source)", "key (source)", layers, zeros=encoder_zeros))
    if dec_self:
        layers = torch.stack(dec_self, 1)[0].float().cpu()[:, :, :T, :T]   # (L, H, T, T)
        maps.append(_map("decoder-self", "decoder self-attention (causal)", inputs, inputs,
                         "query (decoder input)", "key (decoder input)", layers, zeros=decoder_zeros, mask=CAUSAL))
    return maps


def explain(translator, source: str, out, beam_size: int | None = None) -> dict:
    """One translation and its maps, as the page draws them; `beam_size`
    (when known) says what the score is: a log-probability (1) or a beam's
    length-normalised score, and `ranking` whose: "nmt" (Wu et al.'s lp) or
    "generate" (a Hugging Face model's own search, lp = |Y|^alpha);
    `token_logp` the log P of each output subword (nmt.viz.token_scores)."""
    from nmt.viz.token_scores import token_log_probs    # it reads this module's constants

    score = float(out.score)
    return {"source": source, "text": out.text, "beam_size": beam_size,
            "ranking": getattr(translator, "ranking", "nmt"),
            "score": round(score, DIGITS) if np.isfinite(score) else None,    # JSON has no inf
            "src_pieces": out.src_pieces, "tgt_pieces": out.tgt_pieces, "forced": getattr(out, "forced", 0),
            "tokens": [int(t) for t in getattr(out, "tokens", None) or []],      # the output's ids (nmt.explain)
            "truncated": bool(out.truncated), "unknown": unknown_source(out.src_pieces),
            "token_logp": token_log_probs(translator, source, out), "maps": attention_maps(translator, source, out)}


def translate_and_explain(translator, text: str, beam_size: int = 1, prefix: str | None = None) -> dict:
    """Check `text`, translate it greedily or with a beam (its first output
    subwords forced to `prefix`, when given), gather its maps."""
    text = check_source(translator, text)
    out = translator.translate([text], beam_size=beam_size, **({"prefix": prefix} if prefix else {}))[0]
    result = explain(translator, text, out, beam_size)
    if prefix:
        result["prefix"] = prefix
    return result
