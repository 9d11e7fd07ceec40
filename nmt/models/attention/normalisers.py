"""Attention normalisers: scores -> a distribution over the source.

softmax gives every real position some weight; sparsemax and 1.5-entmax
(from the `entmax` package) give many positions exactly zero, so a heatmap
shows which source tokens were left out. All three are chosen with

    model.attention.normaliser=softmax|sparsemax|entmax15

which every RNN attention (every score, every scope) and every attention of
a Transformer (encoder self-, decoder self- and cross-attention) follows.

Masking: positions where the mask is False get the score -inf before the
normaliser, so they get weight exactly 0 under all three (sparsemax and
entmax threshold them out: [-inf - tau]_+ = 0), and a row's real weights
still sum to 1. A row with no True position is the caller's to handle
(the Transformer gives it weights 0; RNN attention always has a real token).
"""

import entmax
from torch import Tensor

from nmt.errors import NmtError


def softmax(scores: Tensor) -> Tensor:
    """p_i = exp(z_i) / sum_j exp(z_j) over the last axis: dense, p_i > 0."""
    return scores.softmax(dim=-1)


def sparsemax(scores: Tensor) -> Tensor:
    """Sparsemax, the Euclidean projection onto the probability simplex.

    Martins & Astudillo 2016, From Softmax to Sparsemax: A Sparse Model of
    Attention and Multi-Label Classification, ICML, arXiv:1602.02068, eq. (2)
    and Alg. 1:

        sparsemax(z) = argmin over p in the simplex of |p - z|^2
        p_i = [z_i - tau]_+
        sort z descending: z_(1) >= ... >= z_(K)
        k(z) = max{k : 1 + k z_(k) > sum_{j<=k} z_(j)}
        tau  = (sum_{j<=k(z)} z_(j) - 1) / k(z)

    Computed in float32 by entmax.sparsemax (a full sort of the last axis).
    """
    return entmax.sparsemax(scores.float(), dim=-1).to(scores.dtype)


def entmax15(scores: Tensor) -> Tensor:
    """1.5-entmax, between softmax (alpha = 1) and sparsemax (alpha = 2).

    Peters, Niculae & Martins 2019, Sparse Sequence-to-Sequence Models, ACL,
    arXiv:1905.05702, eqs. (8)-(10) with alpha = 1.5:

        alpha-entmax(z) = argmax over p in the simplex of p . z + H_alpha(p)
        p_i = [(alpha - 1) z_i - tau]_+^(1 / (alpha - 1))
            = [z_i / 2 - tau]_+^2                     for alpha = 1.5
        tau: the unique value with sum_i p_i = 1

    Computed in float32 by entmax.entmax15 (exact, by sorting: Peters et
    al.'s Alg. 2).
    """
    return entmax.entmax15(scores.float(), dim=-1).to(scores.dtype)


# model.attention.normaliser -> function(scores (..., S)) -> weights (..., S)
NORMALISERS = {"softmax": softmax, "sparsemax": sparsemax, "entmax15": entmax15}


def check_normaliser(normaliser: str, key: str = "model.attention.normaliser") -> str:
    """Config value in, the same value out, or one clear NmtError."""
    if normaliser not in NORMALISERS:
        raise NmtError(f"{key}={normaliser!r} unknown; choose one of {sorted(NORMALISERS)}")
    return normaliser


def masked_normalise(scores: Tensor, mask: Tensor, normaliser: str = "softmax") -> Tensor:
    """Weights over the last axis, exactly 0 where mask is False.

    scores (..., S); mask bool broadcastable to it, True = may be attended to.
    Every row must keep at least one True (a row with none gives NaN).
    """
    return NORMALISERS[normaliser](scores.masked_fill(~mask, float("-inf")))

