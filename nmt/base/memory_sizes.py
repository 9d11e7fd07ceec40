"""Sizes of memory as the machine has them and as a line says them: the bytes
free for a job on a device, a count of bytes in units (never a 20-digit figure),
and the size an allocator refused, read from its own message so that message is
never printed raw."""

import os
import re


def human_bytes(count: float) -> str:
    """1.2 GB, 340 MB, 7.0 TB: decimal units, never a 20-digit figure."""
    for unit, size in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:,.1f} {unit}"
    return f"{int(count)} bytes"


MODEL_SIZES = ("hidden_size", "d_model", "ff_size", "layers")     # the keys a memory refusal of a model names


def shrink_model(*more: str) -> str:
    """What a memory refusal of a model asks: a smaller model, by MODEL_SIZES and `more`."""
    return f"make it smaller ({', '.join((*MODEL_SIZES, *more))})"


def shrink_positions(max_len: int) -> str:
    """What a memory refusal asks when a learned position table (model.positional.max_len
    rows of d_model numbers) is what does not fit, in place of shrink_model()."""
    return (f"make model.positional.max_len smaller (its table of {max_len:,} learned positions is what does "
            "not fit; data.max_len + 1 positions are enough)")


def free_memory(device=None) -> int | None:
    """Bytes free for a search on `device` (a torch.device or its name): the GPU's
    free memory, else the machine's MemAvailable; None when it cannot be told."""
    kind = getattr(device, "type", str(device or "cpu")).split(":")[0]
    if kind == "cuda":
        try:
            import torch

            return int(torch.cuda.mem_get_info(device)[0])
        except Exception:  # noqa: BLE001 - no GPU to ask: no bound from it
            return None
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def allocation_bytes(error: BaseException) -> float | None:
    """The size an allocator refused, from its message (CPU: "you tried to allocate
    N bytes"; CUDA: "Tried to allocate 1.50 GiB"), or None when it is not one."""
    text = str(error)
    found = re.search(r"allocate (\d+) bytes", text)
    if found:
        return float(found.group(1))
    found = re.search(r"Tried to allocate ([\d.]+) (B|KiB|MiB|GiB|TiB|PiB)", text)
    if found:
        return float(found.group(1)) * 1024 ** ("B KiB MiB GiB TiB PiB".split().index(found.group(2)))
    return None
