"""The beam search of one sentence as a tree of plain JSON-ready data.

    python -m nmt.translate --checkpoint best.pt --beam-size 5 --beam-tree tree.json < one_line.de

writes what the explorer's tree view draws (after Seq2Seq-Vis, Strobelt et
al. 2018): every hypothesis kept at each step, the best pruned candidates,
the finished ones, and the finals with the penalties that ranked them.

    {"source", "src_pieces", "beam_size", "alpha", "beta", "exact_zeros", "ranking",
     "nodes": [{"id", "parent", "step", "token", "piece", "logp", "score",
                "state", "attention"}],
     "finals": [{"node", "rank", "text", "log_prob", "length",
                 "length_penalty", "coverage_penalty", "score"}], "forced"}

`logp` is log P(token | prefix), `score` log P(prefix) summed (natural log);
a final's `score` is log_prob / length_penalty + coverage_penalty, the
number nmt.translate --nbest prints. `ranking` says whose rule that is:
"nmt" (lp = ((5 + |Y|) / 6)^alpha, Wu et al. 2016) or "generate" (a Hugging
Face model's own search: lp = |Y|^alpha, no cp; a forced prefix, state
"forced", is given, not scored). `attention` is the row of source weights
of the decoder step that chose the node's token (the search's attention:
an RNN's, a Transformer's last-layer mean over heads); `forced` how many
first steps a prefix forced. `prefix_attention` gives a node's prefix
with every layer and head, for the explorer to fetch when one is picked.
"""

from nmt.base.errors import NmtError
from nmt.viz.attention_data import DIGITS, check_source, exact_zeros, explain, translate_and_explain

PRUNED_SHOWN = 3        # pruned candidates kept per step, beyond the beam


def _tokens_to(nodes: dict, node: int) -> list[int]:
    """The token ids of the hypothesis ending at `node`, from the first."""
    tokens = []
    while nodes[node].parent is not None:
        tokens.append(nodes[node].token)
        node = nodes[node].parent
    return tokens[::-1]


def beam_tree(translator, text: str, beam_size: int = 5, length_penalty: float = 1.0,
              coverage_penalty: float = 0.0, min_length: int = 0, prefix: str | None = None,
              pruned: int = PRUNED_SHOWN):
    """Translate `text` with a beam, recording its search -> (Translation, tree dict)."""
    if beam_size < 2:
        raise NmtError(f"the beam tree needs a beam of 2 or more (got {beam_size}); greedy search keeps one "
                       "hypothesis")
    if not records_its_beam(translator):
        raise NmtError("the beam tree records nmt's own beam search; this model is decoded by another engine")
    text = check_source(translator, text)
    out, recorder = translator.record_beam(text, beam_size, pruned, length_penalty=length_penalty,
                                           coverage_penalty=coverage_penalty, min_length=min_length, prefix=prefix)
    nodes = {n.id: n for n in recorder.nodes}
    tokenizer = translator.tokenizer
    data = {"source": text, "src_pieces": out.src_pieces, "beam_size": beam_size, "alpha": length_penalty,
            "beta": coverage_penalty, "exact_zeros": exact_zeros(translator), "nodes": [], "finals": []}
    data["ranking"] = getattr(recorder, "ranking", "nmt")
    data["forced"] = int(getattr(out, "forced", 0))           # the first `forced` steps are the prefix
    for n in recorder.nodes:                                # eos is its own piece, </s>
        piece = "<s>" if n.token is None else tokenizer.tgt_pieces([n.token])[0]
        data["nodes"].append({"id": n.id, "parent": n.parent, "step": n.step, "token": n.token, "piece": piece,
                              "logp": round(n.log_prob, DIGITS), "score": round(n.score, DIGITS),
                              "state": n.state, "attention": n.attention})
    for f in sorted(recorder.finals, key=lambda f: f.rank):
        tokens = _tokens_to(nodes, f.node)                      # eos too: decode_tgt skips it
        data["finals"].append({"node": f.node, "rank": f.rank, "text": tokenizer.decode_tgt(tokens),
                               "log_prob": f.log_prob, "length": f.length, "length_penalty": f.length_penalty,
                               "coverage_penalty": f.coverage_penalty, "score": f.score})
    return out, data


def records_its_beam(translator) -> bool:
    """Whether `translator`'s beam search can be recorded: nmt's own, or a
    Hugging Face model's generate() (replayed by nmt.hf.beam_tree); not CTranslate2's."""
    return hasattr(translator, "record_beam") and (getattr(translator, "model", None) is not None
                                                    or getattr(translator, "hf_model", None) is not None)


def explain_with_tree(translator, text: str, beam_size: int = 1, prefix: str | None = None) -> dict:
    """translate_and_explain, and for a beam of nmt's own search its tree
    (`tree`), from the same search; another engine's beam gets `tree_note`."""
    if beam_size < 2:
        return translate_and_explain(translator, text, beam_size, prefix)
    if not records_its_beam(translator):
        result = translate_and_explain(translator, text, beam_size, prefix)
        result["tree_note"] = "no beam tree: this model's beam search is its own library's, which nmt cannot record"
        return result
    out, tree = beam_tree(translator, text, beam_size, prefix=prefix)
    result = explain(translator, tree["source"], out, beam_size)
    if prefix:
        result["prefix"] = prefix
    result["tree"] = tree
    return result


def prefix_attention(translator, text: str, tokens) -> dict:
    """The cross-attention map (every layer and head) of the prefix `tokens`
    (a beam node's path, ids of the target vocabulary): row t is the step
    that chose tokens[t], as in teacher forcing; NmtError for ids that are not
    the model's."""
    from types import SimpleNamespace

    from nmt.viz.attention_data import attention_maps

    size = getattr(translator, "vocab_size", None) or translator.tokenizer.tgt_vocab_size
    if not isinstance(tokens, list) or not tokens or not all(
            isinstance(t, int) and not isinstance(t, bool) and 0 <= t < size for t in tokens):
        raise NmtError(f"tokens must be a non-empty list of target ids from 0 to {size - 1}")
    text = check_source(translator, text)
    tokenizer = translator.tokenizer
    pieces = getattr(tokenizer, "src_pieces", None) or translator.hf_tokenizer.convert_ids_to_tokens   # nmt's; HF's
    out = SimpleNamespace(tokens=tokens, src_pieces=pieces(tokenizer.encode_src(text)),
                          tgt_pieces=tokenizer.tgt_pieces(tokens))
    return next(m for m in attention_maps(translator, text, out) if m["name"] == "cross")
