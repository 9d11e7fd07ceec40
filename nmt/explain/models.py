"""What nmt.explain asks of a model, for nmt's own models and Hugging Face ones.

Both answer through their public forward passes only: nmt's
`Seq2Seq.forward(src, tgt_in)`, `encode`, and the decoder's teacher-forced
call with `need_weights`; a Hugging Face encoder-decoder's
`model(input_ids, attention_mask, decoder_input_ids, output_attentions=True)`.
A `Pair` is one source and the output being explained, teacher-forced:
the decoder reads start + y_1 .. y_(T-1) and row t predicts targets[t]
(the output's subwords, then </s>).
"""

from typing import NamedTuple

import torch
from torch import Tensor

from nmt.data.tokenizer import BOS_ID, EOS_ID
from nmt.base.errors import NmtError


class Pair(NamedTuple):
    src: Tensor          # (1, S) source ids
    tgt_in: Tensor       # (1, T) start, then the output's subwords
    targets: Tensor      # (T,) the output's subwords, then </s>


class Attentions(NamedTuple):
    encoder_self: Tensor | None   # (Le, H, S, S); None: no encoder self-attention (an RNN encoder)
    decoder_self: Tensor | None   # (Ld, H, T, T); None: an RNN decoder
    cross: Tensor                 # (Ld, H, T, S) a Transformer decoder; (1, 1, T, S) an RNN's attention
    memory: Tensor                # (S, Dm) what the cross-attention reads as keys and values


class Projections(NamedTuple):
    w_v: Tensor                   # (D, Dkv)
    b_v: Tensor | None            # (D,)
    w_o: Tensor                   # (D, D)
    heads: int


class NmtModel:
    """One of nmt's models behind a Translator (not an ensemble)."""

    def __init__(self, translator):
        if len(translator.members) > 1:
            raise NmtError(f"an explanation reads one model's gradients and attention; this is an ensemble of "
                           f"{len(translator.members)}: give one --checkpoint")
        self.translator, self.model = translator, translator.model
        blocks = getattr(self.model.decoder, "layers", None)
        self.blocks = blocks if isinstance(blocks, torch.nn.ModuleList) else None   # None: an RNN decoder

    @property
    def transformer_decoder(self) -> bool:
        return self.blocks is not None

    def pair(self, source: str, tokens) -> Pair:
        src, _, _ = self.translator._encode([source])                              # (1, S)
        return self.pair_of_ids(src[0].tolist(), list(tokens))

    def pair_of_ids(self, src_ids: list[int], tgt_ids: list[int]) -> Pair:
        device = self.translator.device
        return Pair(torch.tensor([src_ids], device=device), torch.tensor([[BOS_ID] + tgt_ids], device=device),
                    torch.tensor(tgt_ids + [EOS_ID], device=device))

    def embedding(self) -> torch.nn.Module:
        return self.model.encoder.embed

    def logits(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """src (N, S), tgt_in (N, T) -> (N, T, V)."""
        out, _ = self.model(src, tgt_in)
        return out.logits

    @torch.no_grad()
    def attentions(self, pair: Pair) -> Attentions:
        enc = self.model.encode(pair.src)
        encoder_self, decoder_self = [], [] if self.blocks is not None else None
        if hasattr(self.model.encoder, "layers"):                  # a Transformer encoder
            self.model.encoder(pair.src, enc.memory.mask, self_weights=encoder_self)
        state = self.model.decoder.init_state(enc.memory, enc.init)
        extra = {} if decoder_self is None else {"self_weights": decoder_self}
        out = self.model.decoder(pair.tgt_in, state, enc.memory, need_weights=True, **extra)
        cross = out.layers[0] if out.layers is not None else out.weights[0][None, None]   # (L, H, T, S)
        return Attentions(torch.stack(encoder_self, 1)[0] if encoder_self else None,      # (Le, H, S, S)
                          torch.stack(decoder_self, 1)[0] if decoder_self else None,      # (Ld, H, T, T)
                          cross, enc.memory.states[0])

    def projections(self) -> list[Projections] | None:
        """Each decoder layer's cross-attention value and output projections; None for an RNN decoder."""
        if self.blocks is None:
            return None
        return [Projections(b.cross_attn.w_v.weight, b.cross_attn.w_v.bias, b.cross_attn.w_o.weight,
                            b.cross_attn.heads) for b in self.blocks]


class HFModel:
    """A Hugging Face encoder-decoder behind nmt.hf.translator.HFTranslator."""

    transformer_decoder = True

    def __init__(self, translator):
        self.translator, self.model = translator, translator.hf_model
        self.config = self.model.config

    def pair(self, source: str, tokens) -> Pair:
        ids = self.translator.hf_tokenizer([source])["input_ids"][0]
        return self.pair_of_ids(list(ids), list(tokens))

    def pair_of_ids(self, src_ids: list[int], tgt_ids: list[int]) -> Pair:
        device = self.translator.device
        return Pair(torch.tensor([src_ids], device=device),
                    torch.tensor([[self.config.decoder_start_token_id] + tgt_ids], device=device),
                    torch.tensor(tgt_ids + [self.config.eos_token_id], device=device))

    def embedding(self) -> torch.nn.Module:
        return self.model.get_encoder().embed_tokens

    def logits(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        return self.model(input_ids=src, attention_mask=torch.ones_like(src), decoder_input_ids=tgt_in).logits

    @torch.no_grad()
    def attentions(self, pair: Pair) -> Attentions:
        out = self.model(input_ids=pair.src, attention_mask=torch.ones_like(pair.src),
                         decoder_input_ids=pair.tgt_in, output_attentions=True)
        if not getattr(out, "cross_attentions", None):
            raise NmtError("this Hugging Face model returns no cross-attention; nmt.explain reads "
                           "encoder-decoder models whose output_attentions=True gives cross_attentions")
        stack = lambda layers: torch.stack(layers, 1)[0] if layers else None     # noqa: E731  (L, H, N, M)
        return Attentions(stack(out.encoder_attentions), stack(out.decoder_attentions),
                          stack(out.cross_attentions), out.encoder_last_hidden_state[0])

    def projections(self) -> list[Projections]:
        heads = int(self.config.decoder_attention_heads)
        return [Projections(layer.encoder_attn.v_proj.weight, layer.encoder_attn.v_proj.bias,
                            layer.encoder_attn.out_proj.weight, heads) for layer in self.model.get_decoder().layers]


def model_of(translator):
    """The adapter of `translator`: HFModel for a Hugging Face model, NmtModel
    for nmt's own; NmtError for an engine without the model at hand."""
    if getattr(translator, "hf_model", None) is not None:
        return HFModel(translator)
    if getattr(translator, "model", None) is None or not hasattr(translator.model, "encode") and \
            len(getattr(translator, "members", [])) <= 1:
        raise NmtError("an explanation needs the model itself (nmt's engine with a .pt checkpoint, or --hf); "
                       "CTranslate2 decodes an exported model without its gradients")
    return NmtModel(translator)
