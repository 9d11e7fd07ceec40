"""What the encoder hands the decoder: states, mask, and prepared keys."""

from dataclasses import dataclass
from typing import Any

from torch import Tensor


@dataclass
class Memory:
    """Encoder output as the decoder sees it.

    states:   (B, S, De) encoder states (keys and values of attention)
    mask:     (B, 1, S) bool, True on real source tokens
    prepared: what the decoder's attention precomputed from `states` once per
              sentence (e.g. U_a h_j for Bahdanau), or None
    """

    states: Tensor
    mask: Tensor
    prepared: Any = None

    def index_select(self, index: Tensor) -> "Memory":
        """Reorder or repeat along the batch (beam search)."""
        return Memory(
            self.states.index_select(0, index),
            self.mask.index_select(0, index),
            _select(self.prepared, index),
        )


def _select(value, index: Tensor):
    if value is None:
        return None
    if isinstance(value, Tensor):
        return value.index_select(0, index)
    if isinstance(value, (tuple, list)):
        return type(value)(_select(v, index) for v in value)
    if isinstance(value, dict):
        return {k: _select(v, index) for k, v in value.items()}
    raise TypeError(f"cannot reorder {type(value).__name__}")
