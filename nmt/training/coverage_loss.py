"""Coverage loss: penalises attending again to source tokens already covered."""

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class CoverageLoss:
    """Coverage loss (model.attention.coverage_loss_weight, See et al.'s lambda).

    The coverage idea is Tu, Lu, Liu, Liu & Li 2016, Modeling Coverage for
    Neural Machine Translation, arXiv:1601.04811; the loss is See, Liu &
    Manning 2017, Get To The Point, ACL, arXiv:1704.04368, Sec. 2.3 (eq. 12):

        covloss_t = sum_i min(a_t,i, c_t,i),   c_t = sum over t' < t of a_t'

    summed over real target tokens (eos included, padding not). The trainer
    divides by the real target tokens of the update and adds
    weight * covloss to the token loss.
    """

    weight: float = 0.0

    def __call__(self, weights: Tensor, coverage: Tensor, labels: Tensor, pad_id: int) -> Tensor:
        """weights a (B, T, S), coverage c (B, T, S) (DecoderOutput.coverage),
        labels (B, T) -> scalar sum over t where labels != pad."""
        per_token = torch.minimum(weights.float(), coverage.float()).sum(-1)    # (B, T)
        return per_token.masked_fill(labels == pad_id, 0.0).sum()
