"""The old import path of keep_loop_eager, kept while nmt/training/build.py imports it
from here; the RNN decoder itself is nmt/core/rnn_decoder.py."""

from nmt.core.rnn_decoder import RNNDecoder, keep_loop_eager

__all__ = ["RNNDecoder", "keep_loop_eager"]
