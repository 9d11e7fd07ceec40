"""Label-smoothed cross-entropy over real target tokens, per token."""

import torch
import torch.nn.functional as F
from torch import Tensor

from nmt.training.label_smoothing import LabelSmoothedNLL
from nmt.training.scratch import UpdateScratch


def token_nll(logits: Tensor, labels: Tensor, pad_id: int, smoothing: float = 0.0) -> Tensor:
    """logits (B, T, V), labels (B, T) -> per-token loss (B, T), 0 on padding.

    Label smoothing (Szegedy et al. 2016): the target distribution puts
    1 - eps on the label and eps / V on every class.
    """
    B, T, V = logits.shape
    loss = F.cross_entropy(logits.reshape(B * T, V).float(), labels.reshape(B * T),
                           ignore_index=pad_id, label_smoothing=smoothing, reduction="none")
    return loss.view(B, T)


def token_losses(logits: Tensor, labels: Tensor, pad_id: int, smoothing: float,
                 scratch: UpdateScratch | None = None) -> tuple[Tensor, Tensor]:
    """logits (B, T, V), labels (B, T) -> (label-smoothed loss, plain NLL), each (B, T), 0 on padding.

    One softmax serves both: the training loss (Szegedy et al. 2016,
    (1 - eps) * NLL + eps * mean over V of -log p) and the unsmoothed NLL that
    is logged and rewards hard attention (returned detached). Its backward is
    one pass (nmt.training.label_smoothing.LabelSmoothedNLL). `scratch`: memory
    the softmax writes into, reused batch after batch while no earlier batch
    still needs it (nmt.training.scratch).
    """
    B, T, V = logits.shape
    real = labels != pad_id                                              # (B, T)
    safe_labels = labels.masked_fill(~real, 0)
    smoothed, nll = LabelSmoothedNLL.apply(logits.reshape(B * T, V), safe_labels.reshape(B * T),
                                           float(smoothing), scratch)    # (B*T,) each
    return smoothed.view(B, T).masked_fill(~real, 0.0), nll.view(B, T).masked_fill(~real, 0.0)


def smoothed_loss(logits: Tensor, labels: Tensor, pad_id: int, smoothing: float) -> tuple[Tensor, int]:
    """Mean label-smoothed loss over real target tokens, and their count."""
    n_tokens = int((labels != pad_id).sum())
    return token_losses(logits, labels, pad_id, smoothing)[0].sum() / max(1, n_tokens), n_tokens


def reinforce_loss(log_prob: Tensor, token_loss: Tensor, labels: Tensor, pad_id: int,
                   baseline: float) -> tuple[Tensor, float]:
    """Score-function estimator for hard attention (Xu et al. 2015, Sec. 4.1).

    reward r = -NLL of the token given the sampled position; the gradient
    (r - b) * d log p(position) is followed with a running baseline b.
    Returns the surrogate loss and the batch's mean reward (to update b).
    """
    real = labels != pad_id                                     # (B, T)
    reward = -token_loss.detach()                               # (B, T)
    surrogate = -((reward - baseline) * log_prob)[real].sum() / max(1, int(real.sum()))
    return surrogate, float(reward[real].mean()) if real.any() else baseline


@torch.no_grad()
def perplexity(mean_nll: float) -> float:
    return float(torch.tensor(mean_nll).clamp(max=50).exp())
