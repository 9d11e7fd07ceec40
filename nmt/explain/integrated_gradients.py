"""Integrated gradients: the gradient averaged along the straight path from a
baseline to the source embeddings, times their difference.

Sundararajan, Taly & Yan 2017, Axiomatic Attribution for Deep Networks,
ICML (arXiv:1703.01365), Eq. 1:

    a_t(j) = (e_j - e'_j) * integral over alpha in [0, 1] of
             d f_t(e' + alpha (e - e')) / d e_j  d alpha            (E,)
    score_t(j) = || a_t(j) ||_2                  (nmt.explain.scores)

The baseline e' is all zeros (no source embedding: the embedding of a
padding id, which nmt's models keep at zero). The integral is Captum's
Gauss-Legendre quadrature with STEPS points (`IntegratedGradients`,
method "gausslegendre"); completeness, sum over j and the embedding
dimension of a_t(j) = f_t(e) - f_t(e'), holds up to that quadrature's
error, which `integrated_gradients` returns.
"""

import torch
from torch import Tensor

from nmt.explain.objective import Objective, batch
from nmt.explain.scores import token_scores

STEPS = 32           # quadrature points of the path integral
ROWS_PER_PASS = 256  # copies of the sentence in one forward pass (memory)


def integrated_gradients(objective: Objective, steps: int = STEPS) -> tuple[Tensor, Tensor]:
    """-> (scores (T, S): || a_t(j) ||_2, gap (T,): completeness error
    sum_j,d a_t(j)_d - (f_t(e) - f_t(0)) of each target token)."""
    from captum.attr import IntegratedGradients

    inputs, rows = batch(objective)                                  # (T, S, E), (T,)
    attribution, gap = IntegratedGradients(objective.forward).attribute(
        inputs, baselines=torch.zeros_like(inputs), additional_forward_args=(rows,), n_steps=steps,
        method="gausslegendre", internal_batch_size=max(ROWS_PER_PASS, inputs.shape[0]),
        return_convergence_delta=True)
    return token_scores(attribution), gap.detach()                   # (T, S), (T,)
