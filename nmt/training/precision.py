"""trainer.precision: the number format of autocast's matrix products.

fp32 (none), bf16 (CPU or GPU), fp16 (GPU, with a gradient scaler), or auto:
bf16 where the hardware multiplies bf16 natively, fp32 elsewhere. On a CPU
"natively" means the avx512_bf16 or amx_bf16 instructions (Linux reports them
in /proc/cpuinfo's flags); without them oneDNN emulates bf16, which is slower
than fp32. On this project's 2-core AMD EPYC (avx512_bf16) bf16 took 0.56
(transformer_small) and 0.68 (rnn_bahdanau) of fp32's forward and backward
time (benchmarks/RESULTS.md §8). Weights, optimizer and loss stay fp32.
"""

from contextlib import nullcontext

import torch

from nmt.base.device import cpu_flags, read_cpuinfo

PRECISIONS = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
CHOICES = ("auto", *PRECISIONS)
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def resolve_precision(name: str, device: torch.device, cpuinfo: str | None = None) -> str:
    """fp32, bf16 or fp16 for trainer.precision=NAME on `device` (auto decided here)."""
    if name != "auto":
        return name
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    if device.type != "cpu":
        return "fp32"
    flags = cpu_flags(read_cpuinfo() if cpuinfo is None else cpuinfo)
    return "bf16" if flags & set(NATIVE_BF16_FLAGS) else "fp32"


def autocast(device: torch.device, precision: str, cache: bool = True):
    """The autocast context of a resolved precision (none for fp32); `cache=False`:
    weights are cast anew each time (a CUDA graph's capture needs that)."""
    dtype = PRECISIONS[precision]
    return torch.autocast(device.type, dtype=dtype, cache_enabled=cache) if dtype else nullcontext()
