"""Scaled dot-product score, one head, no projections.

Vaswani et al. 2017, Attention Is All You Need, NeurIPS, arXiv:1706.03762,
Sec. 3.2.1:

    score(s, h) = s . h / sqrt(d),   d = key_dim

The 1/sqrt(d) keeps the scores' variance near 1 when s and h have
unit-variance entries, so the softmax does not saturate from the start.
Several heads with learned projections: nmt/core/multihead.py.
"""

import math

from torch import Tensor

from nmt.core.attention.base import Attention, require_same_dims
from nmt.core.attention.luong_dot import dot_score


def scaled_dot_score(query: Tensor, keys: Tensor) -> Tensor:
    """s . h / sqrt(D): query (B, T, D), keys (B, S, D) -> (B, T, S)."""
    return dot_score(query, keys) / math.sqrt(query.size(-1))


class ScaledDotAttention(Attention):
    """Scaled dot-product attention; needs query_dim == key_dim (else use
    luong_general or multihead)."""

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 normaliser: str = "softmax"):
        require_same_dims("scaled_dot", query_dim, key_dim)
        super().__init__(query_dim, key_dim, scope, window, normaliser)

    def score(self, query: Tensor, prepared: Tensor) -> Tensor:
        return scaled_dot_score(query, prepared)                       # (B, T, S)
