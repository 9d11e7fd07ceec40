"""Transformer encoder: self-attention and feed-forward layers.

Vaswani et al. 2017, Attention Is All You Need, arXiv:1706.03762, Sec. 3.1:

    x_0 = Embed(src) * sqrt(D) + PE          (PE from `positional`)
    x_l = Layer_l(x_{l-1}),  l = 1 .. L       (self-attention + FFN)
    memory = LN(x_L) with pre-norm, x_L with post-norm
"""

import math
from typing import Optional

import torch
from torch import Tensor, nn

from nmt.core.multihead import MultiHeadAttention
from nmt.core.outputs import EncoderOutput
from nmt.core.positional.base import PositionalSpec
from nmt.core.positional.sinusoidal import SinusoidalPositions
from nmt.core.transformer_layers import ResidualLayer, check_sizes, feed_forward, layer_stack


class TransformerEncoderLayer(ResidualLayer):
    """Self-attention, then a position-wise feed-forward network, each in the
    pre- or post-norm residual of `layers.ResidualLayer`."""

    def __init__(self, d_model, heads, ff_size, dropout, norm_first, position,
                 normaliser="softmax"):
        super().__init__(norm_first, dropout)
        self.self_attn = MultiHeadAttention(d_model, heads, dropout, position=position,
                                            normaliser=normaliser)
        self.ff = feed_forward(d_model, ff_size, dropout)
        self.norm_attn = nn.LayerNorm(d_model)
        self.norm_ff = nn.LayerNorm(d_model)

    def forward(self, x: Tensor, mask: Tensor, self_weights: Optional[list] = None) -> Tensor:
        """x (B, S, D), mask (B, 1, 1, S) -> (B, S, D). A list given as
        `self_weights` gets this layer's self-attention weights (B, H, S, S)."""
        want = self_weights is not None
        h = self._inp(x, self.norm_attn)
        out, weights = self.self_attn(h, h, mask, need_weights=want)
        if want:
            self_weights.append(weights)
        x = self._add(x, out, self.norm_attn)
        return self._add(x, self.ff(self._inp(x, self.norm_ff)), self.norm_ff)


class TransformerEncoder(nn.Module):
    """Transformer encoder.

    Departure: pre-norm by default (norm_first=True), which trains without
    warm-up tricks on small data; norm_first=False is the paper's post-norm.
    `last` is the state at each sentence's last real token, for bridges.
    `normaliser` (softmax, sparsemax, entmax15) turns self-attention scores
    into weights; the yaml takes it from model.attention.normaliser.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 256,
        layers: int = 3,
        heads: int = 4,
        ff_size: int = 1024,
        dropout: float = 0.1,
        norm_first: bool = True,
        positional: Optional[PositionalSpec] = None,
        pad_id: int = 0,
        normaliser: str = "softmax",
    ):
        super().__init__()
        check_sizes(d_model, heads, "encoder")
        positional = SinusoidalPositions() if positional is None else positional
        self.d_model = d_model
        self.output_size = d_model
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        nn.init.normal_(self.embed.weight, std=d_model**-0.5)
        nn.init.zeros_(self.embed.weight[pad_id])
        self.position = positional.input_layer(d_model)
        self.drop = nn.Dropout(dropout)
        self.layers = layer_stack(layers, lambda: TransformerEncoderLayer(
            d_model, heads, ff_size, dropout, norm_first, positional.attention_layer(d_model // heads),
            normaliser))
        self.final_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, src: Tensor, src_mask: Tensor,
                self_weights: Optional[list] = None) -> EncoderOutput:
        """src (B, S) long, src_mask (B, 1, S) bool -> memory (B, S, D), last (B, D).

        A list given as `self_weights` gets each layer's self-attention
        weights (B, H, S, S), first layer first (for heatmaps)."""
        x = self.embed(src) * math.sqrt(self.d_model)                  # (B, S, D)
        x = self.drop(self.position(x))
        mask = src_mask[:, None]                                       # (B, 1, 1, S)
        for layer in self.layers:
            x = layer(x, mask, self_weights)
        memory = self.final_norm(x)                                    # (B, S, D)
        last_index = (src_mask.sum(dim=-1).squeeze(1) - 1).clamp(min=0)   # (B,)
        last = memory[torch.arange(memory.size(0), device=memory.device), last_index]
        return EncoderOutput(memory, last)                             # (B, D)
