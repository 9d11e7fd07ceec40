"""Boolean masks, one convention everywhere: True = may be attended to.

Vaswani et al. 2017, Attention Is All You Need, NeurIPS, arXiv:1706.03762,
Sec. 3.2.3: the decoder's self-attention may not look ahead, "masking out
(setting to -inf) all values in the input of the softmax which correspond to
illegal connections". Padding is masked the same way in every attention:

    score(t, s) = -inf  where mask[t, s] is False,   so  weight(t, s) = 0
"""

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
