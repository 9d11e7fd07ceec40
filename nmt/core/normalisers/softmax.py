"""Softmax: the dense normaliser every attention paper starts from.

Bahdanau, Cho & Bengio 2015, Neural Machine Translation by Jointly Learning
to Align and Translate, ICLR, arXiv:1409.0473, Sec. 3.1:

    a_ij = exp(e_ij) / sum_k exp(e_ik)

so every real position gets some weight, a_ij > 0.
"""

from torch import Tensor


def softmax(scores: Tensor) -> Tensor:
    """p_i = exp(z_i) / sum_j exp(z_j) over the last axis: dense, p_i > 0."""
    return scores.softmax(dim=-1)


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last axis, 0 where mask is False.

    scores (..., S); mask bool broadcastable to it, True = may be attended to.
    Every row must keep at least one True (a row with none gives NaN).
    """
    return scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)


def masked_log_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """log of masked_softmax, computed stably (-inf where mask is False)."""
    return scores.masked_fill(~mask, float("-inf")).log_softmax(dim=-1)
