"""Sparsemax: a normaliser that gives many positions exactly zero.

Martins & Astudillo 2016, From Softmax to Sparsemax: A Sparse Model of
Attention and Multi-Label Classification, ICML, arXiv:1602.02068, eq. (2)
and Alg. 1:

    sparsemax(z) = argmin over p in the simplex of |p - z|^2
    p_i = [z_i - tau]_+
    sort z descending: z_(1) >= ... >= z_(K)
    k(z) = max{k : 1 + k z_(k) > sum_{j<=k} z_(j)}
    tau  = (sum_{j<=k(z)} z_(j) - 1) / k(z)
"""

import entmax
from torch import Tensor


def sparsemax(scores: Tensor) -> Tensor:
    """scores (..., S) -> weights (..., S) summing to 1, many exactly 0.

    Computed in float32 by entmax.sparsemax (a full sort of the last axis).
    """
    return entmax.sparsemax(scores.float(), dim=-1).to(scores.dtype)
