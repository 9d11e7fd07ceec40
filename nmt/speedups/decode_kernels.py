"""Faster CPU kernels for decoding (`kernels="fast"`): a model's nn.Linear
products through oneDNN, and a Transformer decoder step's attention written out.

torch's x86 wheels multiply fp32 matrices with MKL, which on a processor that
is not Intel's takes generic kernels: the beam's output projection, (B*W, 256)
by (256, 8,000) at every step, runs at a fraction of the core's rate there.
CTranslate2 multiplies with oneDNN (DNNL) on such a CPU. torch ships the same
library (torch.backends.mkldnn); `use_onednn` makes every nn.Linear of a model
compute its eval-mode forward with it, on the weight reordered once into
oneDNN's blocked layout:

    Y = X W^T + b          # X (..., in), W (out, in), Y (..., out)

A decoder step asks for one query per row, for which SDPA's fused CPU kernel
(flash attention, built for long query blocks) is slower than the attention
written out, q k^T, the normaliser, times v: the path a Transformer already
takes where it reports weights (TransformerDecoder.explicit_attention).

The maths of both is the plain one; the sums are added in another order, so
the floats differ from torch's kernels in the last bits (about 1e-5
relative) and a near-tie of the beam may go the other way. It is therefore
opt-in (Translator(..., kernels="fast"), `nmt.translate --kernels fast`);
the default, "torch", decodes with torch's kernels, bit for bit as before.
For the products, training
(module.training true), autograd, autocast, a GPU tensor and dtypes other
than float32 fall back to F.linear. The reordered weight is rebuilt when the
parameter changes (its version or storage), so a model trained on after it
decoded multiplies with its new weights.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.base.errors import NmtError
from nmt.speedups.swap import eager_cpu, swap_class

KERNELS = ("plain", "torch", "fast")    # plain: the core's step alone; torch adds the kept cache (same floats)
BATCH_HINT = 64     # the rows oneDNN's weight layout is chosen for (any row count is then accepted)


def onednn_available() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def check_kernels(kernels, device: torch.device) -> None:
    """NmtError unless `kernels` is one of KERNELS and, for fast, runs on this device."""
    if kernels not in KERNELS:
        raise NmtError(f"kernels={kernels!r} must be one of {', '.join(repr(k) for k in KERNELS)}")
    if kernels == "fast" and (device.type != "cpu" or not onednn_available()):
        where = "this torch build has no oneDNN" if device.type == "cpu" else f"the model is on {device}"
        raise NmtError(f"kernels='fast' (--kernels fast) multiplies on the CPU through oneDNN, but {where}; "
                       "use kernels='torch'")


class OneDNNLinear(nn.Linear):
    """nn.Linear whose eval-mode forward multiplies through oneDNN; the same
    parameters and state dict."""

    def forward(self, x: Tensor) -> Tensor:
        if self.training or not _applies(x, self.weight):
            return F.linear(x, self.weight, self.bias)
        return torch.ops.mkldnn._linear_pointwise(x, self._packed(), self.bias, "none", [], "")   # (..., out)

    def _packed(self) -> Tensor:
        """The weight (out, in) in oneDNN's layout, rebuilt when the parameter has changed."""
        key = (self.weight.data_ptr(), self.weight._version)
        if getattr(self, "_packed_key", None) != key:
            with torch.no_grad():
                self._packed_weight = torch.ops.mkldnn._reorder_linear_weight(self.weight.detach(), BATCH_HINT)
            self._packed_key = key
        return self._packed_weight


def _applies(x: Tensor, weight: Tensor) -> bool:
    """oneDNN can take the product: float32 CPU tensors, nothing to differentiate, no autocast."""
    return (
        x.dtype == torch.float32
        and eager_cpu(x, weight)
        and not (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad))
    )


def use_onednn(model: nn.Module) -> int:
    """Every module of exactly nn.Linear in `model` becomes a OneDNNLinear
    (its parameters untouched, so a tied output projection stays tied); returns how many."""
    return len(swap_class(model, nn.Linear, OneDNNLinear))


def use_explicit_attention(model: nn.Module) -> int:
    """Every Transformer decoder in `model` writes its step's attention out; returns how many."""
    decoders = [m for m in model.modules() if hasattr(type(m), "explicit_attention")]
    for decoder in decoders:
        decoder.explicit_attention = True
    return len(decoders)


def use_fast_kernels(model: nn.Module) -> None:
    """kernels="fast" on `model`, in place: oneDNN products and explicit step attention."""
    use_onednn(model)
    use_explicit_attention(model)
