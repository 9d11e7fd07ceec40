"""What a decoder's teacher-forced forward pass returns."""

from typing import NamedTuple, Optional

from torch import Tensor


class DecoderOutput(NamedTuple):
    logits: Tensor                      # (B, T, V)
    weights: Optional[Tensor] = None    # (B, T, S) attention to show
    layers: Optional[Tensor] = None     # (B, L, H, T, S) every layer and head
    log_prob: Optional[Tensor] = None   # (B, T) hard attention samples
    center: Optional[Tensor] = None     # (B, T) local-p centres p_t
    coverage: Optional[Tensor] = None   # (B, T, S) coverage attention: c_t before each step
