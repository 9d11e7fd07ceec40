"""Attention normalisers chosen by name, with the mask applied.

softmax gives every real position some weight; sparsemax (Martins &
Astudillo 2016, ICML, arXiv:1602.02068) and 1.5-entmax (Peters, Niculae &
Martins 2019, ACL, arXiv:1905.05702) give many positions exactly zero, so a
heatmap shows which source tokens were left out. All three are chosen with

    model.attention.normaliser=softmax|sparsemax|entmax15

which every RNN attention (every score, every scope) and every attention of
a Transformer (encoder self-, decoder self- and cross-attention) follows.

Masking: positions where the mask is False get the score -inf before the
normaliser, so they get weight exactly 0 under all three (sparsemax and
entmax threshold them out: [-inf - tau]_+ = 0), and a row's real weights
still sum to 1. A row with no True position is the caller's to handle
(the Transformer gives it weights 0; RNN attention always has a real token).
"""

from torch import Tensor

from nmt.core.errors import NmtError
from nmt.core.normalisers.entmax import entmax15
from nmt.core.normalisers.softmax import softmax
from nmt.core.normalisers.sparsemax import sparsemax

# model.attention.normaliser -> function(scores (..., S)) -> weights (..., S)
NORMALISERS = {"softmax": softmax, "sparsemax": sparsemax, "entmax15": entmax15}


def check_normaliser(normaliser: str, key: str = "model.attention.normaliser") -> str:
    """Config value in, the same value out, or one clear NmtError."""
    if normaliser not in NORMALISERS:
        raise NmtError(f"{key}={normaliser!r} unknown; choose one of {sorted(NORMALISERS)}")
    return normaliser


def masked_normalise(scores: Tensor, mask: Tensor, normaliser: str = "softmax") -> Tensor:
    """Weights over the last axis, exactly 0 where mask is False.

    scores (..., S); mask bool broadcastable to it, True = may be attended to.
    Every row must keep at least one True (a row with none gives NaN).
    """
    return NORMALISERS[normaliser](scores.masked_fill(~mask, float("-inf")))
