"""The old import path of keep_loop_eager, kept while nmt/training/build.py imports it
from here; it is nmt/speedups/eager_loop.py's (the RNN decoder: nmt/core/rnn_decoder.py)."""

from nmt.speedups.eager_loop import keep_loop_eager

__all__ = ["keep_loop_eager"]
