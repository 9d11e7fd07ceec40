"""What passes between the parts: encoder output, memory, decoder output.

The interfaces of Vaswani et al. 2017 (Attention Is All You Need, NeurIPS,
arXiv:1706.03762, Sec. 3.1) and Bahdanau et al. 2015 (ICLR, arXiv:1409.0473,
Sec. 3) alike: an encoder maps the source to states h_1 .. h_S (the memory),
a decoder reads them through attention and gives one distribution over the
vocabulary per target position.
"""

from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

from torch import Tensor


class EncoderOutput(NamedTuple):
    """What every encoder returns."""

    memory: Tensor   # (B, S, De) one state per source token
    last: Tensor     # (B, De) a summary: the state at the last real token


class DecoderOutput(NamedTuple):
    """What a decoder's teacher-forced forward pass returns."""

    logits: Tensor                      # (B, T, V)
    weights: Optional[Tensor] = None    # (B, T, S) attention to show
    layers: Optional[Tensor] = None     # (B, L, H, T, S) every layer and head
    log_prob: Optional[Tensor] = None   # (B, T) hard attention samples
    center: Optional[Tensor] = None     # (B, T) local-p centres p_t
    coverage: Optional[Tensor] = None   # (B, T, S) coverage attention: c_t before each step


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
