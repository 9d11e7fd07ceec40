"""The label-smoothed loss with a one-pass backward of its own: the same two values
as nmt.core.loss.label_smoothed_nll (the smoothed loss and the plain NLL), in
fewer passes over the (N, V) logits (trainer.speedups=auto; `off` trains with
the core's function).

Label smoothing (Szegedy et al. 2016, Rethinking the Inception Architecture,
Sec. 7): the target distribution puts 1 - eps on the label y and eps / V on
every class, so with p = softmax(z) over the vocabulary of size V

    L = (1 - eps) * (-log p_y) + eps * (1/V) sum_v (-log p_v)

and, since d(-log p_v)/dz_k = p_k - [k = v],

    dL/dz_k = p_k - (1 - eps) [k = y] - eps / V

Autograd reaches the same gradient through log-softmax's backward, gather's
scatter into a zero (N, V) tensor and mean's expansion, about five passes over
(N, V). Here the forward keeps p = softmax(z) itself, so the backward is one
scale and one scatter on it, in place, with no exp; the losses need only
log p_y and the mean of log p, which come from p_y and the logits:

    -log p_y = -log(p_y)                 (rows where p_y underflows float32,
                                          nll > 69, get logsumexp(z) - z_y)
    (1/V) sum_v log p_v = mean(z) - logsumexp(z) = mean(z) - z_y + log p_y

The plain NLL -log p_y is logged and is the reward of hard attention; it is
not differentiable. scripts/benchmarks/profile_ab.py loss measures it against autograd.
With a `scratch` (nmt.speedups.scratch), a CPU forward writes p into memory
kept from batch to batch instead of a fresh (N, V) tensor.

    token_losses = partial(fused_label_smoothed_nll, scratch=UpdateScratch())
    training_loss(out, labels, PAD, weights, counts, token_losses=token_losses)
"""

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from nmt.speedups.scratch import UpdateScratch

UNDERFLOW = 1e-30   # p_y below this: float32 keeps few of its digits (subnormal from 1.2e-38)


def capturing(tensor: Tensor) -> bool:
    """Whether `tensor`'s work is being recorded into a CUDA graph (trainer.cuda_graphs)."""
    return tensor.is_cuda and torch.cuda.is_current_stream_capturing()


class LabelSmoothedNLL(torch.autograd.Function):
    """logits (N, V), labels (N,) long, eps -> (smoothed loss (N,), nll (N,)).

    Its backward runs once (it overwrites the probabilities it saved)."""

    @staticmethod
    def forward(ctx, logits: Tensor, labels: Tensor, smoothing: float, scratch: UpdateScratch | None = None):
        z = logits.float()                                                    # (N, V)
        if scratch is None or not z.is_cpu:   # a GPU's caching allocator reuses memory itself
            probs = z.softmax(-1)                                             # (N, V)
        else:                                 # the same floats, into memory kept from batch to batch
            probs = torch.ops.aten._softmax.out(z, -1, False, out=scratch.take(z.shape))
        z_label = z.gather(-1, labels[:, None])[:, 0]                         # (N,)
        p_label = probs.gather(-1, labels[:, None])[:, 0]                     # (N,)
        nll = -p_label.log()                                                  # (N,)
        tiny = p_label < UNDERFLOW                                            # log p_y not exact there
        if capturing(z):               # a CUDA graph cannot read the device: every row's fallback, chosen
            nll = torch.where(tiny, z.logsumexp(-1) - z_label, nll)
        elif bool(tiny.any()):
            nll[tiny] = z[tiny].logsumexp(-1) - z_label[tiny]
        mean_log_prob = z.mean(-1) - z_label - nll                            # (N,) (1/V) sum_v log p_v
        smoothed = (1.0 - smoothing) * nll - smoothing * mean_log_prob        # (N,)
        ctx.save_for_backward(probs, labels)
        ctx.smoothing, ctx.dtype = smoothing, logits.dtype
        ctx.mark_non_differentiable(nll)
        return smoothed, nll

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor, _):
        probs, labels = ctx.saved_tensors
        eps, V = ctx.smoothing, probs.size(-1)
        g = grad.float()[:, None]                                            # (N, 1)
        out = probs.mul_(g).sub_(g * (eps / V))                              # g * (p - eps / V), in place
        out.scatter_add_(-1, labels[:, None], -(1.0 - eps) * g)              # - g (1 - eps) [k = y]
        return out.to(ctx.dtype), None, None, None


def fused_label_smoothed_nll(logits: Tensor, labels: Tensor, pad_id: int, smoothing: float,
                             scratch: UpdateScratch | None = None) -> tuple[Tensor, Tensor]:
    """logits (B, T, V), labels (B, T) -> (label-smoothed loss, plain NLL), each (B, T), 0 on padding:
    nmt.core.loss.label_smoothed_nll's values (equal to float rounding), one softmax serving both,
    its backward one pass. `scratch`: memory the softmax writes into, reused batch after batch
    while no earlier batch still needs it."""
    B, T, V = logits.shape
    real = labels != pad_id                                              # (B, T)
    safe_labels = labels.masked_fill(~real, 0)
    smoothed, nll = LabelSmoothedNLL.apply(logits.reshape(B * T, V), safe_labels.reshape(B * T),
                                           float(smoothing), scratch)    # (B*T,) each
    return smoothed.view(B, T).masked_fill(~real, 0.0), nll.view(B, T).masked_fill(~real, 0.0)
