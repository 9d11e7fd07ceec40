"""An nmt Transformer as a CTranslate2 model: what can be exported, and how.

Klein et al. 2020, Efficient and High-Quality Neural Machine Translation
with OpenNMT (CTranslate2), WNGT. CTranslate2 describes a model by a
specification (`ctranslate2.specs.TransformerSpec`) whose variables a
converter (`ctranslate2.converters.Converter`) fills; `Converter.convert`
then checks, quantizes and writes it. nmt's layers map one to one:

    nmt                                  CTranslate2 spec
    embed.weight (V, D), * sqrt(D)       embeddings.weight, scale_embeddings
    sinusoidal / learned / no positions  position_encodings.encodings (P, D), a table
    relative (Shaw et al.) tables        self_attention.relative_position_{keys,values}
    rotary (pairs 2i, 2i+1)              rotary_dim=0 (all), rotary_interleave=True
    self_attn w_q, w_k, w_v; w_o         self_attention.linear[0] (3D, D) fused; linear[1]
    cross_attn w_q; w_k, w_v; w_o        attention.linear[0]; linear[1] (2D, Dm) fused; linear[2]
    norm_attn / norm_self, norm_cross    self_attention.layer_norm, attention.layer_norm
    ff[0], ff[3], norm_ff                ffn.linear_0, ffn.linear_1, ffn.layer_norm
    final_norm (pre-norm only)           layer_norm (pre_norm=True)
    out.weight (V, D), no bias           decoder.projection

Departures, all exact: nmt's sinusoids (sin and cos interleaved, positions
from 0) are not CTranslate2's built-in ones (sines then cosines, positions
from 1), so the table is written out, POSITION_ROWS rows; no positions are
a table of zeros; a relative encoding without value terms gets a value
table of zeros; a memory projection (encoder and decoder of different
widths) is folded into the cross-attention keys and values,
W_k (P m + p) + b_k = (W_k P) m + (W_k p + b_k).

Not representable, refused by `check_exportable` in one line before
anything is written: RNN and LSTMN encoders and decoders, ALiBi (CTranslate2
has it in decoders only, nmt also biases the encoder) and the sparse
normalisers (CTranslate2's attention is softmax).
"""

import json
from pathlib import Path

import numpy as np
import torch
from ctranslate2.converters import Converter
from ctranslate2.specs import TransformerDecoderSpec, TransformerEncoderSpec, TransformerSpec
from omegaconf import DictConfig
from torch import Tensor, nn

from nmt.data.tokenizer import Tokenizer
from nmt.deploy import layout
from nmt.base.errors import NmtError
from nmt.config_schema.combinations import TRANSFORMER_DECODER, TRANSFORMER_ENCODER
from nmt.core.positional.base import AttentionPositions
from nmt.core.positional.learned import LearnedEmbedding
from nmt.core.positional.relative import RelativeTerms
from nmt.core.positional.rotary import RotaryEmbedding
from nmt.core.positional.sinusoidal import SinusoidalEmbedding, sinusoidal_table

EXPORTABLE_POSITIONS = ("sinusoidal", "learned", "relative", "rotary", "none")
POSITION_ROWS = 1024     # sinusoidal / no positions: longest source or output CTranslate2 can take


def _option(node: DictConfig, part: str) -> str:
    """How the user chose a part: model/decoder=gru, model/encoder=lstmn."""
    name = node.get("cell") or str(node.get("_target_", "")).rsplit(".", 1)[-1].lower().removesuffix(part)
    return f"model/{part}={name}"


def check_exportable(model_cfg: DictConfig) -> None:
    """NmtError naming the first part of the model CTranslate2 cannot represent."""
    for part, target in (("encoder", TRANSFORMER_ENCODER), ("decoder", TRANSFORMER_DECODER)):
        node = model_cfg[part]
        if node.get("_target_") != target:
            raise NmtError(f"cannot export {_option(node, part)} to CTranslate2: it runs Transformer "
                           "encoders and decoders only (model/encoder=transformer model/decoder=transformer)")
    kind = str(model_cfg.positional.get("kind", "none"))
    if kind == "alibi":
        raise NmtError("cannot export model/positional=alibi to CTranslate2: it has ALiBi in decoders "
                       "only, and nmt's Transformer encoder uses it too; exportable positions are "
                       + ", ".join(EXPORTABLE_POSITIONS))
    if kind not in EXPORTABLE_POSITIONS:
        raise NmtError(f"cannot export model/positional={kind} to CTranslate2; exportable positions are "
                       + ", ".join(EXPORTABLE_POSITIONS))
    for part in ("encoder", "decoder"):
        normaliser = model_cfg[part].get("normaliser", "softmax")
        if normaliser != "softmax":
            raise NmtError(f"cannot export model.attention.normaliser={normaliser} to CTranslate2: "
                           "its attention normalises with softmax only")


def _array(tensor: Tensor):
    """A float32 copy: CTranslate2's quantization scales its variables in place,
    which must not reach the model's own weights."""
    return tensor.detach().float().cpu().numpy().copy()


def _linear(spec, *layers: nn.Linear, fold: nn.Module | None = None) -> None:
    """spec.weight (sum of outputs, in) and bias from `layers` stacked along
    their outputs; `fold` (a Linear applied before them) multiplied in."""
    weight = torch.cat([layer.weight for layer in layers])               # (O, I)
    bias = torch.cat([layer.bias if layer.bias is not None else weight.new_zeros(layer.out_features)
                      for layer in layers])                              # (O,)
    if isinstance(fold, nn.Linear):
        bias = weight @ fold.bias + bias                                 # W p + b
        weight = weight @ fold.weight                                    # (O, I') = W P
    spec.weight = _array(weight)
    if any(layer.bias is not None for layer in layers) or isinstance(fold, nn.Linear):
        spec.bias = _array(bias)


def _norm(spec, norm: nn.LayerNorm) -> None:
    spec.gamma = _array(norm.weight)
    spec.beta = _array(norm.bias)


def _position_table(layer: nn.Module, d_model: int) -> Tensor | None:
    """What CTranslate2 adds to the scaled embeddings, (P, D); None when the
    positions live in attention (relative, rotary)."""
    if isinstance(layer, LearnedEmbedding):
        return layer.table.weight                                         # (max_len, D)
    if isinstance(layer, SinusoidalEmbedding):
        return sinusoidal_table(torch.arange(POSITION_ROWS), d_model, layer.base)   # (P, D)
    return None


def _self_attention(spec, attention, norm: nn.LayerNorm) -> None:
    """Fused q, k, v and output projections; relative tables where there are some."""
    _linear(spec.linear[0], attention.w_q, attention.w_k, attention.w_v)    # (3D, D)
    _linear(spec.linear[1], attention.w_o)
    _norm(spec.layer_norm, norm)
    position = attention.position
    if isinstance(position, RelativeTerms):
        spec.relative_position_keys = _array(position.key_table)             # (2k+1, Dh)
        values = position.value_table if position.value_table is not None else \
            torch.zeros_like(position.key_table)
        spec.relative_position_values = _array(values)


def _feed_forward(spec, ff: nn.Sequential, norm: nn.LayerNorm) -> None:
    _linear(spec.linear_0, ff[0])
    _linear(spec.linear_1, ff[3])
    _norm(spec.layer_norm, norm)


def _positional_options(attention) -> dict:
    """Spec arguments for the positions one self-attention layer holds."""
    position = attention.position
    if isinstance(position, RotaryEmbedding):
        return {"rotary_dim": 0, "rotary_interleave": True, "rotary_base": position.base}
    if type(position) not in (RelativeTerms, AttentionPositions):        # ALiBi: check_exportable says so
        raise NmtError(f"cannot export {type(position).__name__} positions to CTranslate2; exportable "
                       "positions are " + ", ".join(EXPORTABLE_POSITIONS))
    return {"relative_position": isinstance(position, RelativeTerms)}


def _input_positions(spec, layer: nn.Module, attention, d_model: int) -> None:
    """Set spec.position_encodings unless the positions live in attention
    (relative, rotary); a Transformer without positions gets zeros (else
    CTranslate2 would add sinusoids of its own)."""
    if type(attention.position) is not AttentionPositions:                    # relative, rotary
        return
    table = _position_table(layer, d_model)
    spec.position_encodings.encodings = _array(torch.zeros(POSITION_ROWS, d_model) if table is None
                                               else table)


def encoder_spec(encoder) -> TransformerEncoderSpec:
    first = encoder.layers[0]
    spec = TransformerEncoderSpec(len(encoder.layers), first.self_attn.heads, pre_norm=first.norm_first,
                                  **_positional_options(first.self_attn))
    spec.embeddings[0].weight = _array(encoder.embed.weight)                  # (V, D)
    _input_positions(spec, encoder.position, first.self_attn, encoder.d_model)
    if first.norm_first:
        _norm(spec.layer_norm, encoder.final_norm)
    for layer_spec, layer in zip(spec.layer, encoder.layers):
        _self_attention(layer_spec.self_attention, layer.self_attn, layer.norm_attn)
        _feed_forward(layer_spec.ffn, layer.ff, layer.norm_ff)
    return spec


def decoder_spec(decoder, memory_proj: nn.Module) -> TransformerDecoderSpec:
    first = decoder.layers[0]
    # Heatmaps: the mean of all heads (0) of the shown layer, or head 0 alone (1).
    heads = 1 if decoder.attention_head == 0 else 0
    spec = TransformerDecoderSpec(len(decoder.layers), first.self_attn.heads, pre_norm=first.norm_first,
                                  alignment_layer=decoder.attention_layer, alignment_heads=heads,
                                  **_positional_options(first.self_attn))
    spec.embeddings.weight = _array(decoder.embed.weight)                     # (V, D)
    _input_positions(spec, decoder.position, first.self_attn, decoder.d_model)
    if first.norm_first:
        _norm(spec.layer_norm, decoder.final_norm)
    _linear(spec.projection, decoder.out)                                      # (V, D), no bias
    for layer_spec, layer in zip(spec.layer, decoder.layers):
        _self_attention(layer_spec.self_attention, layer.self_attn, layer.norm_self)
        cross = layer_spec.attention
        _linear(cross.linear[0], layer.cross_attn.w_q)
        _linear(cross.linear[1], layer.cross_attn.w_k, layer.cross_attn.w_v, fold=memory_proj)
        _linear(cross.linear[2], layer.cross_attn.w_o)
        _norm(cross.layer_norm, layer.norm_cross)
        _feed_forward(layer_spec.ffn, layer.ff, layer.norm_ff)
    return spec


def model_spec(model, tokenizer: Tokenizer) -> TransformerSpec:
    """The whole model, vocabularies and special tokens as a TransformerSpec."""
    spec = TransformerSpec(encoder_spec(model.encoder), decoder_spec(model.decoder, model.memory_proj))
    source = tokenizer.src_pieces(range(tokenizer.src_vocab_size))
    target = tokenizer.tgt_pieces(range(tokenizer.tgt_vocab_size))
    spec.register_source_vocabulary(source)
    spec.register_target_vocabulary(target)
    spec.config.unk_token = target[tokenizer.unk_id]
    spec.config.bos_token = target[tokenizer.bos_id]
    spec.config.eos_token = target[tokenizer.eos_id]
    spec.config.decoder_start_token = target[tokenizer.bos_id]
    spec.config.layer_norm_epsilon = model.decoder.layers[0].norm_ff.eps
    return spec


class NmtConverter(Converter):
    """CTranslate2's converter for a loaded nmt Transformer (eval mode, CPU).

        NmtConverter(model, tokenizer).convert(folder, quantization="int8")

    The specification is filled here, so what cannot be exported raises
    before `convert` writes anything.
    """

    def __init__(self, model, tokenizer: Tokenizer):
        with torch.no_grad():
            self.spec = model_spec(model, tokenizer)

    def _load(self) -> TransformerSpec:
        return self.spec


def export_translator(translator, output, quantization: str = "float32", checkpoint: str = "",
                      check=None) -> dict:
    """Write `translator`'s model (an nmt.Translator of one Transformer) to
    the folder `output` as layout.py describes; returns its metadata.
    `check(folder)` runs on the finished folder before it takes `output`'s
    place: an NmtError there leaves `output` as it was."""
    converter = NmtConverter(translator.model, translator.tokenizer)
    encodings = getattr(getattr(converter.spec.decoder, "position_encodings", None), "encodings", None)
    rows = len(encodings) if isinstance(encodings, np.ndarray) else None     # the table CTranslate2 holds
    limits = [n for n in (translator.max_tgt_len, rows) if n]              # nmt's decoding step cap, the table
    table = min(limits) if limits else None
    metadata = {"format": layout.FORMAT, "checkpoint": str(checkpoint), "quantization": quantization,
                "max_src_len": min(translator.max_src_len, table or translator.max_src_len),
                "max_tgt_len": translator.max_tgt_len, "positions": table,
                "attention_layer": translator.model.decoder.attention_layer}
    protos = translator.tokenizer.to_bytes()

    def build(folder: Path) -> None:
        converter.convert(str(folder), quantization=quantization)
        (folder / layout.SOURCE_SPM).write_bytes(protos["src"])
        (folder / layout.TARGET_SPM).write_bytes(protos["tgt"])
        (folder / layout.METADATA).write_text(json.dumps(metadata, indent=1) + "\n", encoding="utf-8")
        if check is not None:
            check(folder)

    layout.write_folder(build, Path(output))
    return metadata
