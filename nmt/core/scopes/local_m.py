"""Monotonic local attention (local-m): a window around p_t = t.

Luong, Pham & Manning 2015, Effective Approaches to Attention-based Neural
Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3.2:

    p_t = t,   a_t(s) = softmax over real s in [p_t - D, p_t + D] of score(h_t, h_s),
               a_t(s) = 0 outside the window

"softmax" stands for the chosen normaliser (nmt/core/normalisers/masked.py).
"""

import torch
import torch.nn.functional as F
from torch import Tensor

from nmt.core.normalisers.masked import masked_normalise


def window_mask(centers: Tensor, mask: Tensor, window: int) -> Tensor:
    """Real positions s with |s - c_t| <= D; if none, the real one nearest c_t.

    centers (B, T) float, mask (B, 1, S) bool -> (B, T, S) bool.
    The nearest real position is always inside a non-empty window, so adding
    it changes nothing there; in an empty window it is the fallback. With
    right padding and c_t past the source end, it is the last real token.
    """
    S = mask.size(-1)
    s = torch.arange(S, device=mask.device, dtype=torch.float32)
    dist = (s - centers.float()[..., None]).abs()                     # (B, T, S)
    inside = mask & (dist <= window)                                  # (B, T, S)
    nearest = dist.masked_fill(~mask, float("inf")).argmin(-1)        # (B, T)
    return inside | F.one_hot(nearest, S).bool()


def local_m(scores: Tensor, mask: Tensor, centers: Tensor, window: int, training: bool,
            normaliser: str = "softmax"):
    """scores (B, H, T, S), centers (B, T) = t -> read = weights (B, H, T, S), no log_prob."""
    allowed = window_mask(centers, mask, window)[:, None]             # (B, 1, T, S)
    weights = masked_normalise(scores, allowed, normaliser)           # (B, H, T, S)
    return weights, weights, None
