"""Memory that CPU training updates keep from one update to the next.

A fresh tensor pays a page fault for every 4 KiB it touches: glibc maps each
allocation over 32 MiB anew and returns it when it is freed. The (N, V)
tensors of a transformer_small update, the output layer's logits and the
loss's probabilities, are 3,700 x 8,000 floats (118 MB) each. With its
softmax written into kept memory, the loss's forward and backward took 0.63x
the time on one Zen 2 core (scripts/benchmarks/profile_ab.py loss_scratch), the same
floats.

    scratch = UpdateScratch()
    probs = torch.ops.aten._softmax.out(z, -1, False, out=scratch.take(z.shape))

`take` hands out the kept memory only while nothing else refers to it: a
tensor taken earlier that is still alive (held by a caller, or saved by
autograd for a backward that has not run) makes it hand out fresh memory, so
nothing written is ever written over. In the trainer the batch before is done
with by the next forward, and the memory is reused. The count of references
is torch's own (`torch._C._storage_Use_Count`); a torch without it gets fresh
memory every time.

The rest of an update's tensors come from glibc's heap, which by default
gives freed memory back to the system once more than its trim threshold (up
to 64 MiB) lies free at its top, and an update frees most of its memory at
the end of its backward: the
next update faults it all in again. `keep_freed_heap` keeps it instead, with
allocations over 32 MiB mapped apart as glibc does at most. A transformer_small
update (trainer.matmul=openblas, data.sort_by=target, one Zen 2 core) then
took 9,600-10,400 page faults instead of 32,800-39,900 and ran at 1.04x the
target tokens a second (median of 3 alternating rounds), with the same peak
memory (benchmarks/kept_memory.md).
"""

import ctypes
import math
import platform

import torch
from torch import Tensor

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
MMAP_THRESHOLD = 32 << 20  # glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit)
TRIM_THRESHOLD = (1 << 31) - 1  # a C int: freed memory at the heap's top is kept up to 2 GiB


def keep_freed_heap() -> bool:
    """glibc: keep freed heap memory for the next update (the process's setting,
    from now on); allocations over 32 MiB mapped apart. False where the C library
    is not glibc (nothing changed)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1


def storage_references(tensor: Tensor) -> int:
    """How many tensors, views and storage handles share `tensor`'s memory (0: unknown)."""
    count = getattr(torch._C, "_storage_Use_Count", None)
    return count(tensor.untyped_storage()._cdata) if count else 0


class UpdateScratch:
    """One buffer, grown to the largest tensor taken and kept."""

    def __init__(self):
        self._keep(torch.empty(0))

    def __deepcopy__(self, memo) -> "UpdateScratch":
        """A copy of a model (averaged weights, the test set's scorer) gets its own empty scratch:
        the contents are an old update's, not worth 118 MB of copying."""
        return UpdateScratch()

    def _keep(self, buffer: Tensor) -> None:
        self.buffer = buffer  # (capacity,)
        self.idle_references = storage_references(buffer)  # the count when nothing else refers to it

    def in_use(self) -> bool:
        """Whether a tensor taken earlier still refers to the buffer (or the count is unknown)."""
        return self.idle_references == 0 or storage_references(self.buffer) > self.idle_references

    def take(self, shape, dtype: torch.dtype = torch.float32) -> Tensor:
        """An uninitialised CPU tensor of `shape`: on the kept memory when it is free."""
        if self.in_use():
            return torch.empty(shape, dtype=dtype)
        numel = math.prod(shape)
        if self.buffer.numel() < numel or self.buffer.dtype != dtype:
            self._keep(torch.empty(numel, dtype=dtype))
        return self.buffer[:numel].view(shape)
