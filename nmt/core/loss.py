"""The training loss of one batch: label-smoothed cross-entropy, the coverage
loss, guided alignment and hard attention's score-function term, summed in
`training_loss`. Each term has its own function below with its paper and
formula; all are plain torch operations, differentiated by autograd:
label smoothing (Szegedy et al. 2016, Sec. 7), the coverage loss (See et al.
2017, Sec. 2.3, eq. 12), guided alignment (Garg et al. 2019) and the hard
attention term (Xu et al. 2015, Sec. 4.1).

    terms = training_loss(out, labels, PAD, LossWeights(smoothing=0.1), Counts(tokens, sentences))
    terms.loss.backward()

Every term is a sum over the batch divided by a count of the whole update
(`Counts`: its real target tokens, sentences and linked target positions,
all batches and ranks together), so that gradient accumulation over several
batches adds up to the gradient of one large batch.

The perplexity nmt reports is exp of the mean NLL per real target token,

    PPL = exp(min(NLL, 50))

capped at e^50 (about 5e21), so a diverged run logs a number, not inf.
"""

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

GUIDE_FLOOR = 1e-9   # log(a) of an attention weight that is exactly 0 (sparsemax) stays finite
PERPLEXITY_CAP = 50.0   # the most NLL per token that perplexity() exponentiates


def perplexity(nll: float) -> float:
    """The mean NLL per real target token (nats) -> exp(min(nll, 50)); nan stays nan."""
    return math.exp(min(nll, PERPLEXITY_CAP))


def label_smoothed_nll(logits: Tensor, labels: Tensor, pad_id: int, smoothing: float) -> tuple[Tensor, Tensor]:
    """logits z (B, T, V), labels y (B, T) -> (smoothed loss, plain NLL), each (B, T), 0 on padding.

    Label smoothing: Szegedy, Vanhoucke, Ioffe, Shlens & Wojna 2016,
    Rethinking the Inception Architecture for Computer Vision, CVPR, Sec. 7.
    The target puts 1 - eps on the label and eps / V on every class, so with
    log p = log_softmax(z) over the vocabulary of size V

        L = (1 - eps) * (-log p_y) + eps * (1/V) sum_v (-log p_v)

    The plain NLL -log p_y is returned detached: it is logged, and it is the
    reward of hard attention. nmt.speedups.fused_loss computes the same two
    values with a one-pass backward of its own.
    """
    log_p = logits.float().log_softmax(-1)                      # (B, T, V)
    real = labels != pad_id                                      # (B, T)
    safe = labels.masked_fill(~real, 0)                          # padding's label: any valid index
    nll = -log_p.gather(-1, safe[..., None])[..., 0]             # (B, T) -log p_y
    uniform = -log_p.mean(-1)                                    # (B, T) (1/V) sum_v -log p_v
    smoothed = (1.0 - smoothing) * nll + smoothing * uniform     # (B, T)
    return smoothed.masked_fill(~real, 0.0), nll.detach().masked_fill(~real, 0.0)


def coverage_loss(weights: Tensor, coverage: Tensor, labels: Tensor, pad_id: int) -> Tensor:
    """weights a (B, T, S), coverage c (B, T, S), labels (B, T) -> scalar sum over real t.

    The coverage vector is Tu, Lu, Liu, Liu & Li 2016, Modeling Coverage for
    Neural Machine Translation, arXiv:1601.04811; the loss is See, Liu &
    Manning 2017, Get To The Point, ACL, arXiv:1704.04368, Sec. 2.3, eq. 12:

        covloss_t = sum_i min(a_t,i, c_t,i),   c_t = sum over t' < t of a_t'

    summed over real target tokens (eos included, padding not). It is small
    where attention goes to source words not yet attended to.
    """
    per_token = torch.minimum(weights.float(), coverage.float()).sum(-1)    # (B, T)
    return per_token.masked_fill(labels == pad_id, 0.0).sum()


def guided_alignment_loss(attention: Tensor, guide: Tensor) -> tuple[Tensor, int]:
    """attention a (B, T, S), guide G (B, T, S) -> (scalar sum over t, |T|).

    Garg, Peitz, Nallasamy & Paulik 2019, Jointly Learning to Align and
    Translate with Transformer Models, EMNLP, arXiv:1909.02074, the alignment
    loss of their multi-task training:
    the cross-entropy between the rows of the normalised given alignment G
    and the attention rows,

        L_a = -1/|T| sum over t in T of sum_i G_t,i log a_t,i

    A row of G sums to 1, or is all 0 where target position t has no link;
    T is the set of positions that have one. Returned undivided with |T| (the
    update divides by its own |T|). a is floored at 1e-9, so that a zero
    weight of a sparse normaliser gives a large finite loss.
    """
    guide = guide.to(attention.device, torch.float32)
    log_a = attention.float().clamp_min(GUIDE_FLOOR).log()                 # (B, T, S)
    linked = guide.sum(-1) > 0                                             # (B, T)
    return -(guide * log_a).sum(), int(linked.sum())


def hard_attention_loss(log_prob: Tensor, nll: Tensor, labels: Tensor, pad_id: int,
                        baseline: float) -> tuple[Tensor, float]:
    """log p(sampled position) (B, T), the tokens' NLL (B, T), labels (B, T),
    running baseline b -> (surrogate loss, the batch's mean reward).

    Hard (stochastic) attention samples one source position per target token,
    which has no gradient; Xu et al. 2015, Show, Attend and Tell, ICML,
    arXiv:1502.03044, Sec. 4.1, follow the score-function (REINFORCE)
    estimator with reward r = -NLL of the token given the sampled position:

        surrogate = -1/N sum over real t of (r_t - b) * log p(position_t)

    whose gradient is -(r - b) d log p; b, a running mean of r, lowers the
    variance. The caller updates b from the returned mean reward.
    """
    real = labels != pad_id                                     # (B, T)
    reward = -nll.detach()                                      # (B, T)
    surrogate = -((reward - baseline) * log_prob)[real].sum() / max(1, int(real.sum()))
    return surrogate, float(reward[real].mean()) if real.any() else baseline


@dataclass(frozen=True)
class LossWeights:
    smoothing: float = 0.0   # eps of label smoothing (trainer.label_smoothing)
    coverage: float = 0.0    # lambda of the coverage loss (model.attention.coverage_loss_weight)
    guided: float = 0.0      # lambda of guided alignment (trainer.guided_alignment.weight)


@dataclass(frozen=True)
class Counts:
    """What one update's losses are divided by: its whole batches, all ranks together."""
    tokens: int              # real target tokens (labels that are not padding)
    sentences: int
    linked: int = 0          # target positions with an alignment link (guided alignment's |T|)


@dataclass
class BatchLoss:
    loss: Tensor             # scalar: what backward runs on
    nll: Tensor              # (B, T) plain NLL per token, detached, 0 on padding
    terms: dict = field(default_factory=dict)   # the extra terms' values, for the log
    reward: float | None = None                 # hard attention's mean reward (the baseline's update)


def training_loss(out, labels: Tensor, pad_id: int, weights: LossWeights, counts: Counts, *,
                  penalty=0.0, attention: Tensor | None = None, guide: Tensor | None = None,
                  baseline: float = 0.0, token_losses=label_smoothed_nll) -> BatchLoss:
    """The training loss of one batch of an update.

    out: the decoder's output (out.logits (B, T, V); out.weights and
    out.coverage (B, T, S) for the coverage loss; out.log_prob (B, T) under
    hard attention); labels (B, T); penalty: the model's own loss term (a
    bridge's, already weighted; a mean over the batch's sentences);
    attention (B, T, S) the attention guided alignment supervises and guide
    G (B, T, S); baseline: hard attention's b; token_losses: the
    label-smoothed loss (label_smoothed_nll, or a speedup computing the same).

        loss = sum L_smoothed / tokens + penalty * B / sentences
             + lambda_cov * sum covloss / tokens               (See et al. 2017)
             + lambda_guided * sum -G log a / linked            (Garg et al. 2019)
             + surrogate * B / sentences                        (Xu et al. 2015)
    """
    B = labels.size(0)
    smoothed, nll = token_losses(out.logits, labels, pad_id, weights.smoothing)    # (B, T) each
    loss = smoothed.sum() / counts.tokens + penalty * B / counts.sentences
    terms, reward = {}, None
    if weights.coverage:
        covered = coverage_loss(out.weights, out.coverage, labels, pad_id) / counts.tokens
        loss = loss + weights.coverage * covered
        terms["coverage_loss"] = float(covered.detach())
    if weights.guided:
        guided, _ = guided_alignment_loss(attention, guide)
        guided = guided / max(1, counts.linked)
        loss = loss + weights.guided * guided
        terms["guided_alignment_loss"] = float(guided.detach())
    if out.log_prob is not None:
        surrogate, reward = hard_attention_loss(out.log_prob, nll, labels, pad_id, baseline)
        loss = loss + surrogate * B / counts.sentences
    return BatchLoss(loss, nll, terms, reward)
