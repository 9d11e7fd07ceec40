"""How a speedup takes a core piece's place: the module's class is swapped in
place for a subclass that computes the same thing faster, so its parameters,
state dict and tied weights stay as they are. Shared by the OpenBLAS and
oneDNN products (nn.Linear) and the kept decoder cache (TransformerDecoder);
and the one condition both products need of a CPU call."""

import torch
from torch import Tensor, nn


def swap_class(model: nn.Module, old: type, new: type) -> list:
    """Every module of exactly class `old` in `model` becomes a `new` (a subclass of
    `old`, or `old`'s base when swapping back), in place; -> the modules swapped."""
    swapped = [module for module in model.modules() if type(module) is old]
    for module in swapped:
        module.__class__ = new
    return swapped


def eager_cpu(x: Tensor, weight: Tensor) -> bool:
    """A product a CPU library can take in place of torch's: CPU tensors of one dtype,
    no autocast (it would have cast to bf16) and no compiling."""
    return (
        x.device.type == "cpu"
        and weight.dtype == x.dtype
        and not torch.is_autocast_enabled("cpu")
        and not torch.compiler.is_compiling()
    )
