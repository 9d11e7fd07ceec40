"""nn.Linear's matrix products through OpenBLAS in CPU training updates
(`trainer.matmul`).

torch's x86 wheels multiply fp32 matrices with MKL. On an AMD processor MKL's
single-thread GEMM runs at about three quarters of the rate of OpenBLAS, the
BLAS that numpy's wheels ship, on the same core and shapes
(benchmarks/openblas_linear.md). `trainer.matmul=openblas` computes the three
products of every nn.Linear in a training update through numpy, on the
tensors' own memory:

    forward    Y  = X W^T + b          # X (N, in), W (out, in), Y (N, out)
    backward   dX = dY W               # (N, in)
               dW = dY^T X             # (out, in)
               db = sum over n of dY   # (out,)

The maths is nn.Linear's; the sums are added in another order, so the floats
differ from torch's in the last bits. Evaluation, validation and decoding
(`module.training` false) keep torch's products: a checkpoint translates the
same whichever backend trained it. Autocast, torch.compile, a GPU tensor or a
dtype numpy does not multiply in BLAS fall back to F.linear.

    if resolve_matmul(cfg.trainer.matmul, device, precision, compiled) == "openblas":
        start_openblas(model, vocab_size)   # every nn.Linear; the state dict is unchanged

start_openblas sets the process's OpenBLAS libraries to torch's thread count
and leaves them so.
"""

import logging
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.base.device import cpuinfo_fields, read_cpuinfo
from nmt.base.errors import NmtError
from nmt.speedups.scratch import UpdateScratch
from nmt.speedups.swap import eager_cpu, swap_class

log = logging.getLogger(__name__)

BLAS_DTYPES = (torch.float32, torch.float64)


class OpenBLASProducts(torch.autograd.Function):
    """Y = X W^T + b with its gradients, each product one OpenBLAS GEMM."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None, scratch: UpdateScratch | None = None) -> Tensor:
        rows = x.detach().reshape(-1, x.shape[-1]).contiguous()  # (N, in)
        shape = (rows.shape[0], weight.shape[0])
        out = torch.empty(shape, dtype=x.dtype) if scratch is None else scratch.take(shape, x.dtype)  # (N, out)
        np.matmul(rows.numpy(), weight.detach().numpy().T, out=out.numpy())
        if bias is not None:
            out.add_(bias.detach())
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return out.view(*x.shape[:-1], weight.shape[0])  # (..., out)

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        x, weight = ctx.saved_tensors
        grad_rows = grad_out.reshape(-1, grad_out.shape[-1]).contiguous()  # (N, out)
        grad_x = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.empty(grad_rows.shape[0], weight.shape[1], dtype=grad_out.dtype)  # (N, in)
            np.matmul(grad_rows.numpy(), weight.detach().numpy(), out=grad_x.numpy())
            grad_x = grad_x.view(*x.shape)
        if ctx.needs_input_grad[1]:
            rows = x.detach().reshape(-1, x.shape[-1]).contiguous()  # (N, in)
            grad_weight = torch.empty_like(weight)  # (out, in)
            np.matmul(grad_rows.numpy().T, rows.numpy(), out=grad_weight.numpy())
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad_rows.sum(0)  # (out,)
        return grad_x, grad_weight, grad_bias, None


class OpenBLASLinear(nn.Linear):
    """nn.Linear whose training products go through OpenBLAS; the same
    parameters and state dict. `use_openblas` turns a model's nn.Linear
    modules into these in place. With a `scratch`, a training call writes its
    output into memory kept from call to call, when no earlier output still
    holds it (nmt.speedups.scratch)."""

    scratch: UpdateScratch | None = None

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or not blas_applies(x, self.weight):
            return F.linear(x, self.weight, self.bias)
        return OpenBLASProducts.apply(x, self.weight, self.bias, self.scratch)


def blas_applies(x: Tensor, weight: Tensor) -> bool:
    """The products can go to numpy: CPU tensors of one float dtype BLAS
    multiplies, no autocast (it would have cast to bf16) and no compiling."""
    return x.dtype in BLAS_DTYPES and eager_cpu(x, weight)


def use_openblas(model: nn.Module) -> int:
    """Every module of exactly nn.Linear in `model` becomes an OpenBLASLinear
    (its parameters untouched); returns how many."""
    return len(swap_class(model, nn.Linear, OpenBLASLinear))


@contextmanager
def torch_products(model: nn.Module):
    """Within: torch's products (a FLOP counter sees aten's matmuls); after: as before."""
    swapped = swap_class(model, OpenBLASLinear, nn.Linear)
    try:
        yield
    finally:
        for module in swapped:
            module.__class__ = OpenBLASLinear


def numpy_blas() -> str:
    """The BLAS numpy was built on, as numpy names it (its wheels: scipy-openblas), or ''."""
    try:
        return str(np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]).lower()
    except (KeyError, TypeError, ValueError):
        return ""


def openblas_controller():
    """threadpoolctl's handle on the OpenBLAS libraries loaded (numpy's, and scipy's if
    it is loaded), or None where numpy multiplies with another BLAS."""
    from threadpoolctl import ThreadpoolController

    if "openblas" not in numpy_blas():
        return None
    controller = ThreadpoolController().select(internal_api="openblas")
    return controller if controller.lib_controllers else None


def resolve_matmul(
    requested: str, device: torch.device, precision: str, compiled: bool, cpuinfo: str | None = None
) -> str:
    """trainer.matmul -> 'torch' or 'openblas'. `auto` takes OpenBLAS where it
    was measured to pay: an fp32 eager update on one CPU thread, torch on MKL,
    a processor that is not Intel's, numpy on OpenBLAS. An explicit `openblas`
    that cannot apply is one NmtError line."""
    if requested == "torch":
        return "torch"
    cannot = [
        (device.type != "cpu", f"multiplies on the CPU (this run trains on {device.type})"),
        (precision != "fp32", f"multiplies fp32 (this run trains in {precision})"),
        (compiled, "runs the eager update (torch.compile fuses its own products); drop trainer.compile"),
        (openblas_controller() is None, "needs numpy built on OpenBLAS (numpy's wheels are)"),
    ]
    reasons = [why for failed, why in cannot if failed]
    if requested == "openblas":
        if reasons:
            raise NmtError(f"trainer.matmul=openblas {reasons[0]}; use trainer.matmul=torch")
        if torch.get_num_threads() > 1:
            log.warning(
                "trainer.matmul=openblas on %d threads: OpenBLAS's threads and torch's contend; "
                "it pays on one thread (benchmarks/openblas_linear.md)",
                torch.get_num_threads(),
            )
        return "openblas"
    pays = (
        not reasons
        and torch.get_num_threads() == 1
        and torch.backends.mkl.is_available()
        and cpuinfo_fields(read_cpuinfo() if cpuinfo is None else cpuinfo).get("vendor_id", "GenuineIntel")
        != "GenuineIntel"  # an unknown vendor: as Intel's
    )
    return "openblas" if pays else "torch"


def start_openblas(model: nn.Module, vocab_size: int | None = None) -> int:
    """OpenBLAS on torch's thread count, and every nn.Linear of `model` on it. The
    layers with `vocab_size` outputs (the output layer over the target vocabulary)
    write their (N, V) logits into kept memory (nmt.speedups.scratch). Returns how many layers
    multiply through OpenBLAS."""
    openblas_controller().limit(limits=torch.get_num_threads())
    swapped = use_openblas(model)
    for module in model.modules():
        if type(module) is OpenBLASLinear and module.out_features == vocab_size:
            module.scratch = UpdateScratch()
    return swapped
