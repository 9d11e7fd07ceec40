"""Rotary positions (RoFormer): rotate query and key pairs by position.

Su et al. 2021, RoFormer: Enhanced Transformer with Rotary Position
Embedding, arXiv:2104.09864, Sec. 3.4.2:

    q_m = R(m) W_q x_m,  k_n = R(n) W_k x_n,  theta_i = 10000^(-2i/d)
    q_m . k_n = (W_q x_m)^T R(n - m) (W_k x_n)
"""

import math
from typing import Optional

import torch
from torch import Tensor

from nmt.core.errors import NmtError
from nmt.core.positional.base import AttentionPositions, PositionalSpec


def rotate_pairs(x: Tensor, positions: Tensor, base: float = 10000.0) -> Tensor:
    """x (..., T, Dh), positions (T,) -> x with each pair rotated, (..., T, Dh).

    Pair i is (x[2i], x[2i+1]), turned by the angle pos * theta_i with
    theta_i = base^(-2i/Dh):

        [x'_2i  ]   [cos -sin] [x_2i  ]
        [x'_2i+1] = [sin  cos] [x_2i+1]
    """
    dim = x.size(-1)
    i = torch.arange(0, dim, 2, device=x.device, dtype=torch.float32)
    theta = torch.exp(-math.log(base) * i / dim)               # (Dh/2,)
    angle = positions.float()[:, None] * theta[None]           # (T, Dh/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]                     # (..., T, Dh/2)
    turned = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
    return turned.flatten(-2)                                  # (..., T, Dh)


class RotaryEmbedding(AttentionPositions):
    """Rotates queries and keys of one self-attention layer; no parameters."""

    def __init__(self, base: float = 10000.0):
        super().__init__()
        self.base = base

    def rotate(self, x: Tensor, positions: Tensor) -> Tensor:
        return rotate_pairs(x, positions, self.base)


class RotaryPositions(PositionalSpec):
    """Rotary position embedding.

    Logits depend only on the offset n - m. Applied per head (d = Dh) in
    every self-attention layer; cross-attention is left alone. Keys are
    cached already rotated, so incremental decoding needs nothing extra.
    """

    kind = "rotary"

    def __init__(self, base: float = 10000.0, kind: Optional[str] = None):
        super().__init__(kind)
        self.base = base

    def attention_layer(self, d_head: int) -> RotaryEmbedding:
        if d_head % 2:
            raise NmtError(
                f"rotary positions need an even head size, got d_model/heads={d_head}; "
                "change model.encoder/decoder d_model or heads"
            )
        return RotaryEmbedding(self.base)
