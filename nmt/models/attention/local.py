"""Local attention (Luong, Pham & Manning 2015, Sec. 3.2): windows and centres.

Luong, Pham & Manning 2015, Effective Approaches to Attention-based Neural
Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3.2.

Source positions s count from 0. Every scope function here and in hard.py
has the signature

    scope(scores (B, H, T, S), mask (B, 1, S), centers (B, T) float or None,
          window D, training, normaliser) -> (read, weights, log_prob)

where `read` (B, H, T, S) combines the values, `weights` (B, H, T, S) is the
distribution shown in heatmaps and `log_prob` (B, T) or None. H = 1 for
single-head scores. `normaliser` (softmax, sparsemax, entmax15; see
normalisers.py) turns the scores of the allowed positions into weights;
"softmax" in the formulas below stands for it.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.models.attention.normalisers import masked_normalise


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


def gaussian(centers: Tensor, length: int, sigma: float) -> Tensor:
    """exp(-(s - p_t)^2 / (2 sigma^2)) for s = 0 .. length-1: (B, T) -> (B, T, S)."""
    s = torch.arange(length, device=centers.device, dtype=torch.float32)
    return torch.exp(-((s - centers.float()[..., None]) ** 2) / (2 * sigma**2))


def local_m(scores: Tensor, mask: Tensor, centers: Tensor, window: int, training: bool,
            normaliser: str = "softmax"):
    """Monotonic local attention: p_t = t, softmax over [p_t - D, p_t + D].

        a_t(s) = softmax over real s in the window of score(h_t, h_s), else 0
    """
    allowed = window_mask(centers, mask, window)[:, None]             # (B, 1, T, S)
    weights = masked_normalise(scores, allowed, normaliser)           # (B, H, T, S)
    return weights, weights, None


def local_p(scores: Tensor, mask: Tensor, centers: Tensor, window: int, training: bool,
            normaliser: str = "softmax"):
    """Predictive local attention, sigma = D / 2:

        a_t(s) = softmax_window(score(h_t, h_s)) * exp(-(s - p_t)^2 / (2 sigma^2))

    As in the paper the weights are not renormalised after the Gaussian, so
    they sum to less than 1. With sparsemax or entmax the window's zeros
    stay zeros under the Gaussian.
    """
    allowed = window_mask(centers, mask, window)[:, None]             # (B, 1, T, S)
    bump = gaussian(centers, scores.size(-1), window / 2)[:, None]    # (B, 1, T, S)
    weights = masked_normalise(scores, allowed, normaliser)           # (B, H, T, S)
    weights = weights * bump.to(scores.dtype)
    return weights, weights, None


class CentrePredictor(nn.Module):
    """Local-p's aligned position (Luong et al. 2015, Sec. 3.2):

        p_t = S_len * sigmoid(v_p . tanh(W_p h_t))

    S_len is the real (unpadded) source length, so p_t lies in (0, S_len).
    W_p is square (query_dim x query_dim); the paper leaves its size open.
    No biases, as in the paper.
    """

    def __init__(self, query_dim: int):
        super().__init__()
        self.w_p = nn.Linear(query_dim, query_dim, bias=False)
        self.v_p = nn.Linear(query_dim, 1, bias=False)

    def forward(self, query: Tensor, mask: Tensor) -> Tensor:
        """query (B, T, Dq), mask (B, 1, S) -> p_t (B, T) float32."""
        length = mask.sum(-1).float()                                     # (B, 1)
        gate = torch.sigmoid(self.v_p(torch.tanh(self.w_p(query))))     # (B, T, 1)
        return length * gate.squeeze(-1).float()                         # (B, T)
