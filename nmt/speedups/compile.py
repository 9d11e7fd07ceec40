"""trainer.compile=true: the model's forward (and its backward) through torch.compile.

The compiled forward computes what the model's own does, in fused kernels;
its first calls are slow (it compiles), later ones faster where it pays.
Token-budget batches vary in both B and T, so shapes are dynamic from the
first step: one compile instead of three (static, then T dynamic, then B
too), the same kernels in the end. mode=reduce-overhead on CUDA records one
CUDA graph per batch shape and replays it.
"""

from contextlib import contextmanager

import torch

from nmt.base.errors import NmtError


def compiled(model, mode: str = "default"):
    """`model` (or its DDP wrapper) through torch.compile in `mode` (trainer.compile_mode)."""
    return torch.compile(model, dynamic=True, mode=None if mode == "default" else mode)


@contextmanager
def compile_errors(compiled: bool):
    """trainer.compile=true: torch.compile's own failure (a model or a torch
    version it cannot compile) becomes one line, not Dynamo's pages."""
    try:
        yield
    except torch._dynamo.exc.TorchDynamoException as error:
        if not compiled:
            raise
        detail = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise NmtError(f"trainer.compile=true: torch {torch.__version__} could not compile this model "
                       f"({type(error).__name__}: {detail}); train without trainer.compile") from None
