"""Score functions and the masked softmax: pure functions, no parameters.

Shapes: query (B, T, D), keys (B, S, D) -> scores (B, T, S).
Modules in this package own the parameters and call these.
"""

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from nmt.errors import NmtError


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last axis, 0 where mask is False.

    scores (..., S); mask bool broadcastable to it, True = may be attended to.
    Every row must keep at least one True (a row with none gives NaN).
    """
    return scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)


def masked_log_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """log of masked_softmax, computed stably (-inf where mask is False)."""
    return scores.masked_fill(~mask, float("-inf")).log_softmax(dim=-1)


def dot_score(query: Tensor, keys: Tensor) -> Tensor:
    """s . h: query (B, T, D), keys (B, S, D) -> (B, T, S)."""
    return torch.einsum("btd,bsd->bts", query, keys)


def scaled_dot_score(query: Tensor, keys: Tensor) -> Tensor:
    """s . h / sqrt(D): query (B, T, D), keys (B, S, D) -> (B, T, S)."""
    return dot_score(query, keys) / math.sqrt(query.size(-1))


def unit(x: Tensor) -> Tensor:
    """x / |x| along the last axis; a zero vector stays zero (not 0/0)."""
    return F.normalize(x, dim=-1, eps=1e-8)


def cosine_score(query: Tensor, keys: Tensor) -> Tensor:
    """s . h / (|s| |h|): query (B, T, D), keys (B, S, D) -> (B, T, S).

    A zero vector has cosine 0 with everything.
    """
    return dot_score(unit(query), unit(keys))


def additive_score(query_part: Tensor, key_part: Tensor, v: Tensor) -> Tensor:
    """v . tanh(a + b) for every query/key pair.

    query_part (B, T, A) e.g. W_a s, key_part (B, S, A) e.g. U_a h, v (A,)
    -> (B, T, S).
    """
    hidden = torch.tanh(query_part[:, :, None, :] + key_part[:, None, :, :])  # (B, T, S, A)
    return hidden @ v                                                       # (B, T, S)


def require_same_dims(name: str, query_dim: int, key_dim: int) -> None:
    """Dot-product scores need the decoder state and encoder state to match."""
    if query_dim != key_dim:
        raise NmtError(
            f"model/attention={name} needs query_dim == key_dim but the decoder state has "
            f"{query_dim} and the encoder state {key_dim}; use model/attention=luong_general "
            "(it learns the map between them) or make the sizes equal")
