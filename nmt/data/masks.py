"""Boolean masks, one convention everywhere: True = may be attended to."""

import torch
from torch import Tensor


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """ids (B, S) -> mask (B, 1, S), True on real tokens."""
    return (ids != pad_id)[:, None, :]


def causal_mask(length: int, device=None) -> Tensor:
    """(T, T), True where query t may see key s (s <= t)."""
    return torch.tril(torch.ones(length, length, dtype=torch.bool, device=device))


def target_mask(ids: Tensor, pad_id: int) -> Tensor:
    """ids (B, T) -> (B, T, T): causal and not padding."""
    return padding_mask(ids, pad_id) & causal_mask(ids.size(1), ids.device)[None]
