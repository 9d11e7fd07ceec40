"""Label-smoothed cross-entropy over real target tokens, per token."""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.errors import NmtError
from nmt.training.label_smoothing import LabelSmoothedNLL


def token_nll(logits: Tensor, labels: Tensor, pad_id: int, smoothing: float = 0.0) -> Tensor:
    """logits (B, T, V), labels (B, T) -> per-token loss (B, T), 0 on padding.

    Label smoothing (Szegedy et al. 2016): the target distribution puts
    1 - eps on the label and eps / V on every class.
    """
    B, T, V = logits.shape
    loss = F.cross_entropy(logits.reshape(B * T, V).float(), labels.reshape(B * T),
                           ignore_index=pad_id, label_smoothing=smoothing, reduction="none")
    return loss.view(B, T)


def token_losses(logits: Tensor, labels: Tensor, pad_id: int, smoothing: float) -> tuple[Tensor, Tensor]:
    """logits (B, T, V), labels (B, T) -> (label-smoothed loss, plain NLL), each (B, T), 0 on padding.

    One log-softmax serves both: the training loss (Szegedy et al. 2016,
    (1 - eps) * NLL + eps * mean over V of -log p) and the unsmoothed NLL that
    is logged and rewards hard attention (returned detached). Its backward is
    one pass (nmt.training.label_smoothing.LabelSmoothedNLL).
    """
    B, T, V = logits.shape
    real = labels != pad_id                                              # (B, T)
    safe_labels = labels.masked_fill(~real, 0)
    smoothed, nll = LabelSmoothedNLL.apply(logits.reshape(B * T, V), safe_labels.reshape(B * T),
                                           float(smoothing))             # (B*T,) each
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


def coverage_loss(weights: Tensor, coverage: Tensor, labels: Tensor, pad_id: int) -> Tensor:
    """Coverage loss of See, Liu & Manning 2017, Get To The Point, Sec. 2.3 (eq. 12),
    summed over real target tokens (eos included, padding not):

        covloss_t = sum_i min(a_t,i, c_t,i),   c_t = sum over t' < t of a_t'

    weights a (B, T, S), coverage c (B, T, S) (DecoderOutput.coverage),
    labels (B, T) -> scalar sum over t where labels != pad. The trainer
    divides by the real target tokens and multiplies by
    model.attention.coverage_loss_weight (See et al.'s lambda).
    """
    per_token = torch.minimum(weights.float(), coverage.float()).sum(-1)    # (B, T)
    return per_token.masked_fill(labels == pad_id, 0.0).sum()


GUIDE_FLOOR = 1e-9   # log(a) of an attention weight that is exactly 0 (sparsemax) stays finite


def guided_alignment_loss(weights: Tensor, guide: Tensor) -> tuple[Tensor, int]:
    """Guided alignment loss of Garg, Peitz, Nallasamy & Paulik 2019, Jointly
    Learning to Align and Translate with Transformer Models, EMNLP,
    arXiv:1909.02074, the alignment loss of their multi-task training:

        L_a = -1/|T| sum over t in T of sum_i G_t,i log a_t,i

    weights a (B, T, S), the supervised attention; guide G (B, T, S), the
    given alignment with each row normalised to sum 1 (a row of zeros: that
    target position has no link, and T is the set of positions that have
    one). Returns (the sum over t of -sum_i G_t,i log a_t,i, |T|); the
    caller divides (over all batches of an update). a is floored at 1e-9 so
    that a zero weight of a sparse normaliser gives a large finite loss.
    """
    guide = guide.to(weights.device, torch.float32)
    log_a = weights.float().clamp_min(GUIDE_FLOOR).log()                  # (B, T, S)
    linked = guide.sum(-1) > 0                                            # (B, T)
    return -(guide * log_a).sum(), int(linked.sum())


def supervised_attention(decoder, out, layer: int, head: int):
    """The attention that guided alignment supervises, (B, T, S).

    Transformer decoders: head `head` of the cross-attention of layer
    `layer` (negative counts from the top; Garg et al. use the penultimate
    layer), read from DecoderOutput.layers (B, L, H, T, S), so the forward
    pass needs need_weights=True. RNN decoders: their one attention
    (DecoderOutput.weights; the mean over heads for multi-head attention);
    layer and head are not used. With out=None only checks layer and head
    against the decoder (NmtError naming the key).
    """
    blocks = getattr(decoder, "layers", None)
    if isinstance(blocks, nn.ModuleList):                     # a Transformer decoder
        L = len(blocks)
        H = blocks[0].cross_attn.heads
        if int(layer) != layer or not -L <= layer < L:
            raise NmtError(f"trainer.guided_alignment.layer={layer} but the decoder has {L} layer(s); "
                           f"pick one in [-{L}, {L - 1}]")
        if int(head) != head or not 0 <= head < H:
            raise NmtError(f"trainer.guided_alignment.head={head} but the decoder has {H} heads; "
                           f"pick one in [0, {H - 1}]")
        return None if out is None else out.layers[:, int(layer), int(head)]
    return None if out is None else out.weights
