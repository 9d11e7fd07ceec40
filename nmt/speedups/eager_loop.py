"""torch.compile and the RNN decoder: its teacher-forced loop stays eager.

Dynamo would unroll RNNDecoder.forward's loop over the target for every target
length, and torch 2.13's Inductor fails on the unrolled step's shapes; so
trainer.compile=true compiles the rest and leaves this loop as nmt.core wrote it.
"""

import torch

from nmt.core.rnn_decoder import RNNDecoder


def keep_loop_eager() -> None:
    """torch.compiler.disable on RNNDecoder.forward (the teacher-forced loop),
    once per process; call it before torch.compile sees a model. It is not a
    decorator because it imports torch._dynamo (1-2 s), which every command
    that builds an RNN would pay without compiling anything."""
    if not getattr(RNNDecoder.forward, "kept_eager", False):
        RNNDecoder.forward = torch.compiler.disable(RNNDecoder.forward)
        RNNDecoder.forward.kept_eager = True
