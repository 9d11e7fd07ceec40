"""Input x gradient: each source embedding times the gradient of a target
token's log-probability with respect to it (the first-order Taylor term).

Shrikumar, Greenside, Shcherbina & Kundaje 2016, Not Just a Black Box:
Learning Important Features Through Propagating Activation Differences,
arXiv:1605.01713; Denil, Demiraj & de Freitas 2014, Extraction of Salient
Sentences from Labelled Documents, arXiv:1412.6815.

    a_t(j) = e_j * d f_t / d e_j                 (E,), elementwise
    score_t(j) = || a_t(j) ||_2                  (nmt.explain.scores)

f_t = log p(y_t | y_<t, x) (nmt.explain.objective). Computed by Captum's
`InputXGradient`.
"""

from torch import Tensor

from nmt.explain.objective import Objective, batch
from nmt.explain.scores import token_scores


def input_x_gradient(objective: Objective) -> Tensor:
    """-> (T, S): || e_j * d f_t / d e_j ||_2."""
    from captum.attr import InputXGradient

    inputs, rows = batch(objective)                                  # (T, S, E), (T,)
    products = InputXGradient(objective.forward).attribute(inputs, additional_forward_args=(rows,))
    return token_scores(products)                                    # (T, S)
