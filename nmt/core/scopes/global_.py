"""The global scope: soft attention over every real source token.

Luong, Pham & Manning 2015, Effective Approaches to Attention-based Neural
Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3.1:

    a_t = softmax over real s of score(h_t, h_s),   c_t = sum_s a_t(s) h_s

"softmax" stands for the chosen normaliser (nmt/core/normalisers/masked.py).
"""

from torch import Tensor

from nmt.core.normalisers.masked import masked_normalise


def global_scope(scores: Tensor, mask: Tensor, centers, window: int, training: bool,
                 normaliser: str = "softmax"):
    """scores (B, H, T, S), mask (B, 1, S) -> read = weights (B, H, T, S), no log_prob."""
    weights = masked_normalise(scores, mask[:, None], normaliser)     # (B, H, T, S)
    return weights, weights, None
