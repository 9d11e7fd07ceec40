"""Label-smoothed cross-entropy with a one-pass backward.

Label smoothing (Szegedy et al. 2016, Rethinking the Inception Architecture,
Sec. 7): the target distribution puts 1 - eps on the label y and eps / V on
every class, so with p = softmax(z) over the vocabulary of size V

    L = (1 - eps) * (-log p_y) + eps * (1/V) sum_v (-log p_v)

and, since d(-log p_v)/dz_k = p_k - [k = v],

    dL/dz_k = p_k - (1 - eps) [k = y] - eps / V

Autograd reaches the same gradient through log-softmax's backward, gather's
scatter into a zero (N, V) tensor and mean's expansion, about five passes over
(N, V); here it is exp, one scale, one scatter. The plain NLL -log p_y comes
out of the same log-softmax (logged, and the reward of hard attention), not
differentiable. scripts/profile_ab.py loss measures it against autograd.
"""

import torch
from torch import Tensor


class LabelSmoothedNLL(torch.autograd.Function):
    """logits (N, V), labels (N,) long, eps -> (smoothed loss (N,), nll (N,))."""

    @staticmethod
    def forward(ctx, logits: Tensor, labels: Tensor, smoothing: float):
        log_probs = logits.float().log_softmax(-1)                           # (N, V)
        nll = -log_probs.gather(-1, labels[:, None])[:, 0]                   # (N,)
        smoothed = (1.0 - smoothing) * nll - smoothing * log_probs.mean(-1)  # (N,)
        ctx.save_for_backward(log_probs, labels)
        ctx.smoothing, ctx.dtype = smoothing, logits.dtype
        ctx.mark_non_differentiable(nll)
        return smoothed, nll

    @staticmethod
    def backward(ctx, grad: Tensor, _):
        log_probs, labels = ctx.saved_tensors
        eps, V = ctx.smoothing, log_probs.size(-1)
        g = grad.float()[:, None]                                            # (N, 1)
        out = log_probs.exp().mul_(g).sub_(g * (eps / V))                    # g * (p - eps / V)
        out.scatter_add_(-1, labels[:, None], -(1.0 - eps) * g)              # - g (1 - eps) [k = y]
        return out.to(ctx.dtype), None, None
