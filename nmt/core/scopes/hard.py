"""Hard (stochastic) attention: read one sampled source position.

Xu et al. 2015, Show, Attend and Tell: Neural Image Caption Generation with
Visual Attention, ICML, arXiv:1502.03044, Sec. 4.1:

    alpha_t = softmax over real s of score(h_t, h_s)
    s_t ~ Multinoulli(alpha_t)   in training;   s_t = argmax alpha_t in eval
    c_t = h_{s_t},   log_prob_t = log alpha_t[s_t]

The scope signature is nmt/core/scopes/__init__.py's.
"""

import torch
import torch.nn.functional as F
from torch import Tensor

from nmt.core.normalisers.masked import masked_normalise
from nmt.core.normalisers.softmax import masked_log_softmax


def hard_scope(scores: Tensor, mask: Tensor, centers, window: int, training: bool,
               normaliser: str = "softmax"):
    """Stochastic hard attention (the formulas above): c_t is the value at the chosen position.

    The context carries no gradient to the scores; the trainer follows
    (reward - baseline) * d log_prob (the score-function / REINFORCE
    estimator with a running baseline). `weights` is alpha, so heatmaps show
    the distribution, not the sample. With several heads each head samples
    on its own and log_prob is the sum over heads (the joint sample).
    Departures: no entropy bonus and no mixing in of the expected context
    (Xu et al.'s variance-reduction tricks); log_prob is also returned in
    eval mode, for the argmax.

    With normaliser sparsemax or entmax15, alpha is that sparse distribution
    and s_t is drawn from it, so a position of weight exactly 0 is never
    chosen; log_prob = log alpha_t[s_t] is then taken of the chosen entry
    only (finite, and its gradient d alpha / alpha never meets a zero).
    """
    S = scores.size(-1)
    if normaliser == "softmax":
        log_alpha = masked_log_softmax(scores, mask[:, None])         # (B, H, T, S)
        alpha = log_alpha.exp()
    else:
        alpha = masked_normalise(scores, mask[:, None], normaliser)   # (B, H, T, S)
    if training:
        flat = alpha.detach().float().reshape(-1, S)                  # (B*H*T, S)
        index = torch.multinomial(flat, 1).view(alpha.shape[:-1])     # (B, H, T)
    else:
        index = alpha.argmax(-1)                                      # (B, H, T)
    read = F.one_hot(index, S).to(scores.dtype)                       # (B, H, T, S)
    if normaliser == "softmax":
        log_prob = log_alpha.gather(-1, index[..., None]).squeeze(-1)  # (B, H, T)
    else:
        log_prob = alpha.gather(-1, index[..., None]).squeeze(-1).log()  # (B, H, T)
    return read, alpha, log_prob.sum(1)                               # (B, T)
