"""1.5-entmax: between softmax (alpha = 1) and sparsemax (alpha = 2).

Peters, Niculae & Martins 2019, Sparse Sequence-to-Sequence Models, ACL,
arXiv:1905.05702, eqs. (8)-(10) with alpha = 1.5:

    alpha-entmax(z) = argmax over p in the simplex of p . z + H_alpha(p)
    p_i = [(alpha - 1) z_i - tau]_+^(1 / (alpha - 1))
        = [z_i / 2 - tau]_+^2                     for alpha = 1.5
    tau: the unique value with sum_i p_i = 1
"""

import entmax
from torch import Tensor


def entmax15(scores: Tensor) -> Tensor:
    """scores (..., S) -> weights (..., S) summing to 1, some exactly 0.

    Computed in float32 by entmax.entmax15 (exact, by sorting: Peters et
    al.'s Alg. 2).
    """
    return entmax.entmax15(scores.float(), dim=-1).to(scores.dtype)
