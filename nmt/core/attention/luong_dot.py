"""Luong's "dot" score: the plain inner product, no parameters.

Luong, Pham & Manning 2015, Effective Approaches to Attention-based Neural
Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3.1:

    score(h_t, h_s) = h_t . h_s
"""

import torch
from torch import Tensor

from nmt.core.attention.base import Attention, require_same_dims


def dot_score(query: Tensor, keys: Tensor) -> Tensor:
    """s . h: query (B, T, D), keys (B, S, D) -> (B, T, S)."""
    return torch.einsum("btd,bsd->bts", query, keys)


class DotAttention(Attention):
    """Luong "dot" attention; needs query_dim == key_dim (else use luong_general)."""

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 normaliser: str = "softmax"):
        require_same_dims("luong_dot", query_dim, key_dim)
        super().__init__(query_dim, key_dim, scope, window, normaliser)

    def score(self, query: Tensor, prepared: Tensor) -> Tensor:
        return dot_score(query, prepared)                              # (B, T, S)
