"""Fixed sinusoidal positions added to the embeddings.

Vaswani et al. 2017, Attention Is All You Need, NeurIPS, arXiv:1706.03762, Sec. 3.5:

    PE(pos, 2i)   = sin(pos / 10000^(2i/d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))

added to the token embeddings (after their sqrt(d_model) scaling) of the
encoder and of the decoder. PE at position 0 is [0, 1, 0, 1, ...].
"""

import math
from typing import Optional

import torch
from torch import Tensor

from nmt.core.positional.base import InputPositions, PositionalSpec


def sinusoidal_table(positions: Tensor, dim: int, base: float = 10000.0) -> Tensor:
    """positions (T,) -> encodings (T, dim), float32.

        PE(pos, 2i)   = sin(pos / base^(2i/dim))
        PE(pos, 2i+1) = cos(pos / base^(2i/dim))

    An odd dim drops the last cosine.
    """
    i = torch.arange(0, dim, 2, device=positions.device, dtype=torch.float32)
    inv_freq = torch.exp(-math.log(base) * i / dim)          # (ceil(dim/2),)
    angle = positions.float()[:, None] * inv_freq[None]        # (T, ceil(dim/2))
    table = torch.stack((angle.sin(), angle.cos()), dim=-1)    # (T, ceil(dim/2), 2)
    return table.flatten(1)[:, :dim]                           # (T, dim)


class SinusoidalEmbedding(InputPositions):
    """Adds sinusoidal_table to x; no parameters, any length."""

    def __init__(self, d_model: int, base: float = 10000.0):
        super().__init__()
        self.d_model = d_model
        self.base = base

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        positions = torch.arange(start, start + x.size(1), device=x.device)
        return x + sinusoidal_table(positions, self.d_model, self.base).to(x.dtype)


class SinusoidalPositions(PositionalSpec):
    """Sinusoidal positions (the formula above, any length, no parameters)."""

    kind = "sinusoidal"

    def __init__(self, base: float = 10000.0, kind: Optional[str] = None):
        super().__init__(kind)
        self.base = base

    def input_layer(self, d_model: int) -> SinusoidalEmbedding:
        return SinusoidalEmbedding(d_model, self.base)
