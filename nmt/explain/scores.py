"""One score per source token from a gradient-sized attribution, and rows made comparable.

    score_t(j) = || a_t(j) ||_2        a_t(j) (E,): the attribution of target
                                        token t to source token j's embedding
    shown_t(j) = score_t(j) / sum_k score_t(k)

The L2 norm over the embedding dimension is inseq's default reduction
(Sarti et al. 2023, Inseq: An Interpretability Toolkit for Sequence
Generation Models, ACL demo); it keeps the size of a contribution and drops
its sign. Dividing a row by its sum makes it a distribution over the source,
as an attention row is, so both are drawn on the same 0 to 1 scale
(nmt.viz.colour_scale): a row whose attribution is spread evenly looks flat.
"""

import torch
from torch import Tensor


def token_scores(attribution: Tensor) -> Tensor:
    """attribution (T, S, E) -> (T, S): its L2 norm over the embedding dimension."""
    return attribution.float().norm(dim=-1)


def normalised_rows(scores: Tensor) -> Tensor:
    """scores (..., T, S) >= 0 -> each row divided by its sum; a row of zeros stays zeros."""
    total = scores.sum(dim=-1, keepdim=True)                        # (..., T, 1)
    return torch.where(total > 0, scores / total.clamp_min(torch.finfo(scores.dtype).tiny), scores)
