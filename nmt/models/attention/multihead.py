"""Multi-head scaled dot-product attention for RNN decoders."""

import math

import torch
from torch import Tensor, nn

from nmt.errors import NmtError
from nmt.models.attention.base import Attention


class MultiHeadDotAttention(Attention):
    """H heads of scaled dot-product attention with learned projections.

    Vaswani et al. 2017, Attention Is All You Need, NeurIPS,
    arXiv:1706.03762, Sec. 3.2.2:

        head_h = softmax(s W_q^h . (H W_k^h) / sqrt(Dh)) H W_v^h
        c      = concat(head_1 .. head_H) W_o,        Dh = key_dim / H

    Here the query is one decoder state per step and keys = values = the
    encoder states. Inner size and output size are key_dim. No biases.
    `weights` in the output is the mean over heads; `head_weights()` gives
    every head (B, H, T, S). The scope applies to every head alike (one
    local-p centre per query, shared by the heads; hard samples per head).

    Cost: W_k h is prepared once per sentence; W_v is applied after the
    weighted sum (sum_s a_s W_v v_s = W_v sum_s a_s v_s, exact without a
    bias), so no per-step projection of all values is needed.
    """

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 heads: int = 4, normaliser: str = "softmax"):
        if heads < 1 or key_dim % heads:
            raise NmtError(f"model.attention.heads={heads} must divide the encoder state size "
                           f"{key_dim}; choose a divisor of {key_dim}")
        super().__init__(query_dim, key_dim, scope, window, normaliser)
        self.heads, self.head_dim = heads, key_dim // heads
        self.w_q = nn.Linear(query_dim, key_dim, bias=False)
        self.w_k = nn.Linear(key_dim, key_dim, bias=False)
        self.w_v = nn.Linear(key_dim, key_dim, bias=False)
        self.w_o = nn.Linear(key_dim, key_dim, bias=False)

    def _split(self, x: Tensor) -> Tensor:
        B, L, _ = x.shape
        return x.view(B, L, self.heads, self.head_dim).transpose(1, 2)  # (B, H, L, Dh)

    def prepare(self, keys: Tensor) -> Tensor:
        return self._split(self.w_k(keys))                              # (B, H, S, Dh)

    def score(self, query: Tensor, prepared: Tensor) -> Tensor:
        q = self._split(self.w_q(query))                                # (B, H, T, Dh)
        return q @ prepared.transpose(-1, -2) / math.sqrt(self.head_dim)  # (B, H, T, S)

    def read(self, attn: Tensor, values: Tensor) -> Tensor:
        """attn (B, H, T, S), values (B, S, Dk) -> context (B, T, Dk)."""
        B, H, T, _ = attn.shape
        mixed = attn.to(values.dtype) @ values[:, None]                 # (B, H, T, Dk)
        w_v = self.w_v.weight.view(H, self.head_dim, self.key_dim)      # (H, Dh, Dk)
        heads = torch.einsum("bhtk,hdk->bhtd", mixed, w_v)              # (B, H, T, Dh)
        heads = heads.transpose(1, 2).reshape(B, T, self.key_dim)       # (B, T, Dk)
        return self.w_o(heads)
