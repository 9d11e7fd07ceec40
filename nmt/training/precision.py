"""trainer.precision: the number format of autocast's matrix products.

fp32 (none), bf16 (CPU or GPU), fp16 (GPU, with a gradient scaler), or auto:
bf16 where the hardware multiplies bf16 natively, fp32 elsewhere. On a CPU
"natively" means the avx512_bf16 or amx_bf16 instructions (Linux reports them
in /proc/cpuinfo's flags); without them oneDNN emulates bf16, which is slower
than fp32. On this project's 2-core AMD EPYC (avx512_bf16) bf16 took 0.56
(transformer_small) and 0.68 (rnn_bahdanau) of fp32's forward and backward
time (benchmarks/RESULTS.md §8). Weights, optimizer and loss stay fp32.
"""

from contextlib import contextmanager, nullcontext
from pathlib import Path

import torch

from nmt.errors import NmtError

PRECISIONS = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
CHOICES = ("auto", *PRECISIONS)
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpuinfo_fields(cpuinfo: str) -> dict[str, str]:
    """/proc/cpuinfo's text as key -> value, the first processor's value of each key
    (`vendor_id`, `model name`, `cpu family`, `flags`, ...)."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_flags(cpuinfo: str) -> set[str]:
    """The instruction-set flags of /proc/cpuinfo's text (its first `flags` line)."""
    return set(cpuinfo_fields(cpuinfo).get("flags", "").split())


def read_cpuinfo(path: Path = Path("/proc/cpuinfo")) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:                         # not Linux: no way to tell, so fp32
        return ""


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
