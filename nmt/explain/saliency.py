"""Saliency: the gradient of a target token's log-probability with respect to
each source embedding.

Simonyan, Vedaldi & Zisserman 2014, Deep Inside Convolutional Networks:
Visualising Image Classification Models and Saliency Maps, ICLR workshop
(arXiv:1312.6034); for NMT as in Ding, Xu & Koehn 2019, Saliency-driven
Word Alignment Interpretation for NMT, WMT.

    a_t(j) = d f_t / d e_j                       (E,)
    score_t(j) = || a_t(j) ||_2                  (nmt.explain.scores)

f_t = log p(y_t | y_<t, x) (nmt.explain.objective). Computed by Captum's
`Saliency` (absolute gradients; the norm is the same either way).
"""

from torch import Tensor

from nmt.explain.objective import Objective, batch
from nmt.explain.scores import token_scores


def saliency(objective: Objective) -> Tensor:
    """-> (T, S): || d f_t / d e_j ||_2."""
    from captum.attr import Saliency

    inputs, rows = batch(objective)                                  # (T, S, E), (T,)
    gradients = Saliency(objective.forward).attribute(inputs, abs=True, additional_forward_args=(rows,))
    return token_scores(gradients)                                   # (T, S)
