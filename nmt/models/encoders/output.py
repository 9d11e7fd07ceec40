"""What every encoder returns."""

from typing import NamedTuple

from torch import Tensor


class EncoderOutput(NamedTuple):
    memory: Tensor   # (B, S, De) one state per source token
    last: Tensor     # (B, De) a summary: the state at the last real token
