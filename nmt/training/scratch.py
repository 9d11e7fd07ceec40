"""Memory that a CPU training update writes one large tensor into, kept from
update to update.

A fresh tensor pays a page fault for every 4 KiB it touches: glibc maps each
allocation over 32 MiB anew and returns it when it is freed. The (N, V)
tensors of a transformer_small update, the output layer's logits and the
loss's probabilities, are 3,700 x 8,000 floats (118 MB) each: a softmax took
74 ms into a fresh tensor and 38 ms into kept memory on one Zen 2 core, the
same floats.

    scratch = UpdateScratch()
    probs = torch.ops.aten._softmax.out(z, -1, False, out=scratch.take(z.shape))

`take` hands out the kept memory only while nothing else refers to it: a
tensor taken earlier that is still alive (held by a caller, or saved by
autograd for a backward that has not run) makes it hand out fresh memory, so
nothing written is ever written over. In the trainer the batch before is done
with by the next forward, and the memory is reused. The count of references
is torch's own (`torch._C._storage_Use_Count`); a torch without it gets fresh
memory every time.
"""

import math

import torch
from torch import Tensor


def storage_references(tensor: Tensor) -> int:
    """How many tensors, views and storage handles share `tensor`'s memory (0: unknown)."""
    count = getattr(torch._C, "_storage_Use_Count", None)
    return count(tensor.untyped_storage()._cdata) if count else 0


class UpdateScratch:
    """One buffer, grown to the largest tensor taken and kept."""

    def __init__(self):
        self._keep(torch.empty(0))

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
