"""trainer.device=auto|cpu|cuda|cuda:N to a torch.device, with one clear error; what
/proc/cpuinfo says of the processor (trainer.precision=auto and trainer.matmul=auto read it)."""

import platform
from pathlib import Path

import torch

from nmt.base.errors import NmtError


def resolve_device(name: str, option: str = "trainer.device") -> torch.device:
    """`option`: the setting the name came from, as the user wrote it (trainer.device,
    --device, device=): every error line names it."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name != "cuda" and not name.startswith("cuda:"):
        raise NmtError(f"{option}={name!r} unknown; choose auto, cpu or cuda")
    index = name.removeprefix("cuda").removeprefix(":")
    if name != "cuda" and not (index.isascii() and index.isdigit()):
        raise NmtError(f"{option}={name!r}: the GPU must be a number from 0, e.g. {option}=cuda:0; "
                       f"or use {option}=cuda, cpu or auto")
    if not torch.cuda.is_available():
        raise NmtError(f"{option}={name} but no CUDA GPU is visible; use {option}=cpu or {option}=auto")
    count = torch.cuda.device_count()
    if index and int(index) >= count:
        raise NmtError(f"{option}={name} but this machine shows {count} GPU(s), cuda:0 to cuda:{count - 1}")
    return torch.device(name)


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`tensor` on `device`. A CPU batch bound for a GPU is pinned first and
    copied without blocking, so the copy overlaps the work already queued."""
    if device.type != "cuda" or tensor.is_cuda:
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


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


def cpu_description(cpuinfo: str) -> str:
    """The processor as a benchmark record names it: /proc/cpuinfo's model name with its
    family and model numbers ("AMD EPYC, family 25 model 1"), the platform's processor
    name where the text has no model name."""
    fields = cpuinfo_fields(cpuinfo)
    name = fields.get("model name") or platform.processor() or platform.machine() or "unknown"
    if "cpu family" in fields and "model" in fields:
        return f"{name}, family {fields['cpu family']} model {fields['model']}"
    return name


def read_cpuinfo(path: Path = Path("/proc/cpuinfo")) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:                         # not Linux: nothing known of the processor
        return ""
