"""Learned absolute positions: one trained vector per position.

Gehring et al. 2017, Convolutional Sequence to Sequence Learning, ICML,
arXiv:1705.03122, Sec. 3.1; compared with sinusoids in Vaswani et al.
2017, Sec. 3.5:

    x'_pos = x_pos + P[pos],   P a trained (max_len, d_model) table

One table of max_len vectors per embedding (encoder and
decoder each own one), added to the scaled token embeddings. Cannot
encode a position it never saw: longer sentences raise NmtError.
"""

from typing import Optional

import torch
from torch import Tensor, nn

from nmt.core.errors import NmtError
from nmt.core.positional.base import InputPositions, PositionalSpec


class LearnedEmbedding(InputPositions):
    """Adds table[pos] to x; positions past max_len are an error."""

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.max_len = max_len
        self.table = nn.Embedding(max_len, d_model)
        # Same scale as the sinusoids (RMS 1/sqrt(2)), which the
        # sqrt(d_model)-scaled token embeddings are sized to.
        nn.init.normal_(self.table.weight, std=0.5**0.5)

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        end = start + x.size(1)
        if end > self.max_len:
            raise NmtError(
                f"a sentence reaches position {end} but model.positional.max_len="
                f"{self.max_len}; raise model.positional.max_len or lower data.max_len"
            )
        positions = torch.arange(start, end, device=x.device)
        return x + self.table(positions)[None]                 # (B, T, D)


class LearnedPositions(PositionalSpec):
    """Learned absolute positions, max_len of them (the formula above)."""

    kind = "learned"

    def __init__(self, max_len: int = 256, kind: Optional[str] = None):
        super().__init__(kind)
        if max_len < 1:
            raise NmtError(f"model.positional.max_len={max_len}; use a positive length")
        self.max_len = max_len

    def input_layer(self, d_model: int) -> LearnedEmbedding:
        return LearnedEmbedding(d_model, self.max_len)
