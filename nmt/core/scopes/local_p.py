"""Predictive local attention (local-p): a learned centre and a Gaussian.

Luong, Pham & Manning 2015, Effective Approaches to Attention-based Neural
Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3.2:

    p_t    = S_len * sigmoid(v_p . tanh(W_p h_t))
    a_t(s) = softmax_window(score(h_t, h_s)) * exp(-(s - p_t)^2 / (2 sigma^2)),  sigma = D / 2

over the window [p_t - D, p_t + D] (local_m.window_mask). As in the paper the
weights are not renormalised after the Gaussian, so they sum to less than 1.
With sparsemax or entmax the window's zeros stay zeros under the Gaussian.
"""

import torch
from torch import Tensor, nn

from nmt.core.normalisers.masked import masked_normalise
from nmt.core.scopes.local_m import window_mask


def gaussian(centers: Tensor, length: int, sigma: float) -> Tensor:
    """exp(-(s - p_t)^2 / (2 sigma^2)) for s = 0 .. length-1: (B, T) -> (B, T, S)."""
    s = torch.arange(length, device=centers.device, dtype=torch.float32)
    return torch.exp(-((s - centers.float()[..., None]) ** 2) / (2 * sigma**2))


def local_p(scores: Tensor, mask: Tensor, centers: Tensor, window: int, training: bool,
            normaliser: str = "softmax"):
    """scores (B, H, T, S), centers p_t (B, T) -> read = weights (B, H, T, S), no log_prob."""
    allowed = window_mask(centers, mask, window)[:, None]             # (B, 1, T, S)
    bump = gaussian(centers, scores.size(-1), window / 2)[:, None]    # (B, 1, T, S)
    weights = masked_normalise(scores, allowed, normaliser)           # (B, H, T, S)
    weights = weights * bump.to(scores.dtype)
    return weights, weights, None


class CentrePredictor(nn.Module):
    """Local-p's aligned position p_t = S_len * sigmoid(v_p . tanh(W_p h_t)).

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
