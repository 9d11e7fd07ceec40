"""Content-based addressing of the Neural Turing Machine: sharpened cosine.

Graves, Wayne & Danihelka 2014, Neural Turing Machines, arXiv:1410.5401,
Sec. 3.3.1 (Focusing by Content):

    K(k, h) = k . h / (|k| |h|)
    w(s)    = softmax over real s of beta * K(k_t, h_s)
"""

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.core.attention.base import Attention
from nmt.core.attention.luong_dot import dot_score
from nmt.core.errors import NmtError


def unit(x: Tensor) -> Tensor:
    """x / |x| along the last axis; a zero vector stays zero (not 0/0)."""
    return F.normalize(x, dim=-1, eps=1e-8)


def cosine_score(query: Tensor, keys: Tensor) -> Tensor:
    """s . h / (|s| |h|): query (B, T, D), keys (B, S, D) -> (B, T, S).

    A zero vector has cosine 0 with everything.
    """
    return dot_score(unit(query), unit(keys))


class CosineAttention(Attention):
    """Cosine-similarity attention with a sharpness beta.

    The key k_t is the decoder state, or P s_t with a learned projection
    P: query_dim -> key_dim (no bias) when the sizes differ.

    Departure: in the NTM the controller emits a fresh beta_t >= 0 at every
    step; here beta is one scalar for the whole model. It is LEARNED by
    default (learn_sharpness=True; stored as log beta so it stays positive,
    starting at `sharpness`) or a FIXED hyperparameter (learn_sharpness=false).
    Cosines lie in [-1, 1], so beta = 1 gives nearly flat weights; the
    default 10 lets the weights peak. prepare() returns the unit-length keys.
    """

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 sharpness: float = 10.0, learn_sharpness: bool = True,
                 normaliser: str = "softmax"):
        if sharpness <= 0:
            raise NmtError(f"model.attention.sharpness={sharpness} must be > 0")
        super().__init__(query_dim, key_dim, scope, window, normaliser)
        self.project = (nn.Identity() if query_dim == key_dim
                        else nn.Linear(query_dim, key_dim, bias=False))
        log_beta = torch.tensor(math.log(sharpness))
        if learn_sharpness:
            self.log_beta = nn.Parameter(log_beta)
        else:
            self.register_buffer("log_beta", log_beta)

    @property
    def beta(self) -> Tensor:
        return self.log_beta.exp()

    def prepare(self, keys: Tensor) -> Tensor:
        return unit(keys)                                              # (B, S, Dk) unit rows

    def score(self, query: Tensor, prepared: Tensor) -> Tensor:
        key = unit(self.project(query))                                # (B, T, Dk) unit rows
        return self.beta * dot_score(key, prepared)                    # (B, T, S) beta * cosine
