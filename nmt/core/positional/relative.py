"""Relative positions (Shaw et al.): learned embeddings of clipped offsets.

Shaw, Uszkoreit & Vaswani 2018, Self-Attention with Relative Position
Representations, arXiv:1803.02155, Sec. 3, eqs. (3)-(5):

    e_ij  = (x_i W^Q) (x_j W^K + a_ij^K)^T / sqrt(d_z)
    z_i   = sum_j alpha_ij (x_j W^V + a_ij^V)
    a_ij^K = w^K_clip(j - i, k),  a_ij^V = w^V_clip(j - i, k)
    clip(x, k) = max(-k, min(k, x))
"""

from typing import Optional

import torch
from torch import Tensor, nn

from nmt.core.errors import NmtError
from nmt.core.positional.base import AttentionPositions, PositionalSpec


def relative_index(q_pos: Tensor, k_pos: Tensor, max_relative: int) -> Tensor:
    """q_pos (T,), k_pos (S,) -> (T, S) long in [0, 2k]: clip(j - i, -k, k) + k."""
    offset = k_pos[None, :] - q_pos[:, None]                   # (T, S)
    return offset.clamp(-max_relative, max_relative) + max_relative


class RelativeTerms(AttentionPositions):
    """Shaw's key and value terms for one self-attention layer.

    Holds w^K and w^V, (2k+1, Dh) each, shared by the heads of the layer.
    """

    def __init__(self, d_head: int, max_relative: int, values: bool = True):
        super().__init__()
        self.max_relative = max_relative
        self.key_table = nn.Parameter(torch.randn(2 * max_relative + 1, d_head) * d_head**-0.5)
        self.value_table = (
            nn.Parameter(torch.randn(2 * max_relative + 1, d_head) * d_head**-0.5)
            if values else None
        )
        self.needs_weights = values

    def bias(self, q: Tensor, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        """q (B, H, T, Dh) -> q_i . a_ij^K as (B, H, T, S)."""
        index = relative_index(q_pos, k_pos, self.max_relative)          # (T, S)
        per_offset = q @ self.key_table.t()                              # (B, H, T, 2k+1)
        index = index.expand(*per_offset.shape[:-2], *index.shape)       # (B, H, T, S)
        return per_offset.gather(-1, index)                              # (B, H, T, S)

    def values(self, weights: Tensor, q_pos: Tensor, k_pos: Tensor):
        """weights (B, H, T, S) -> sum_j alpha_ij a_ij^V as (B, H, T, Dh)."""
        if self.value_table is None:
            return None
        index = relative_index(q_pos, k_pos, self.max_relative)
        index = index.expand_as(weights)                                 # (B, H, T, S)
        # Weights of keys at the same clipped offset share a^V: add them up.
        per_offset = weights.new_zeros(*weights.shape[:-1], self.value_table.size(0))
        per_offset = per_offset.scatter_add(-1, index, weights)          # (B, H, T, 2k+1)
        return per_offset @ self.value_table                             # (B, H, T, Dh)


class RelativePositions(PositionalSpec):
    """Relative position representations.

    As in the paper, each self-attention layer owns its tables, shared by its
    heads (d_z = Dh); cross-attention has none. values=False keeps only the
    key term (the paper's ablation), which lets SDPA run with a float bias.
    Offsets need only absolute indices, so incremental decoding works.
    """

    kind = "relative"

    def __init__(self, max_relative: int = 16, values: bool = True, kind: Optional[str] = None):
        super().__init__(kind)
        if max_relative < 0:
            raise NmtError(
                f"model.positional.max_relative={max_relative}; use a clipping distance >= 0"
            )
        self.max_relative = max_relative
        self.values = values

    def attention_layer(self, d_head: int) -> RelativeTerms:
        return RelativeTerms(d_head, self.max_relative, self.values)
