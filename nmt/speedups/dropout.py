"""Dropout whose random mask is cheap to draw on a CPU.

Inverted dropout (Srivastava et al. 2014, Dropout, JMLR 15, Sec. 10; scaled
at training time so that nothing changes at test time):

    y = x * m / q,   m ~ Bernoulli(q) element-wise,   q = 1 - p

torch's CPU dropout draws m with one `bernoulli_` call per element, about
25 ns each: 12% of a transformer_small update (benchmarks/
bench_train_transformer_small_profile.txt). Here one 64-bit random word
(`random_`, torch's seeded generator, so runs stay reproducible and resumable)
gives four 16-bit numbers u, uniform over [-2^15, 2^15), and

    m = [u >= cut - 2^15],   cut = round(p * 2^16),   q = 1 - cut / 2^16

so p is rounded to a multiple of 2^-16 (p = 0.1 drops 6554/65536 = 0.100006),
and at most 1 - 2^-16: any p in [0, 1) keeps some units (p = 0.9999999999
would round to cut = 2^16, every unit dropped and 1/q a division by zero).
The comparison writes m as float itself: the values of a bool mask cast to
float, without the cast (3.5 ms for 4.2M entries from bool on one Zen 2 core,
twice a cast from uint8). m / q took 0.56x the time of the cast mask for
(4096, 1024) and 0.24x for (4096, 256) (scripts/benchmarks/profile_ab.py dropout_noise);
scripts/benchmarks/profile_ab.py dropout measures the whole against F.dropout.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

LEVELS = 1 << 16


def dropout_noise(shape, p: float, device=None, dtype=torch.float32) -> Tensor:
    """m / q for `shape`: 0 with probability cut / 2^16, else 2^16 / (2^16 - cut)."""
    numel = 1
    for size in shape:
        numel *= size
    words = torch.empty((numel + 3) // 4, dtype=torch.int64, device=device)
    words.random_(-(1 << 63), (1 << 63) - 1)                   # every bit uniform (bar one value in 2^64)
    return noise_from_words(words, shape, p).to(dtype)


def noise_from_words(words: Tensor, shape, p: float) -> Tensor:
    """int64 words (N,) -> m / q of `shape` (at most 4N entries), float32."""
    numel = 1
    for size in shape:
        numel *= size
    cut = min(round(p * LEVELS), LEVELS - 1)                   # p < 1 keeps at least one level in 2^16
    u = words.view(torch.int16)[:numel].view(shape)            # four 16-bit numbers a word
    noise = torch.empty(shape, dtype=torch.float32, device=words.device)
    torch.ge(u, cut - LEVELS // 2, out=noise)                  # m: 1.0 kept, 0.0 dropped, written as float
    return noise.mul_(LEVELS / (LEVELS - cut))                 # m / q: 0 or 1/q


class Dropout(nn.Module):
    """A drop-in for nn.Dropout(p): the same maths, a cheaper mask (see above).

    Its mask is drawn from other random numbers than nn.Dropout's, so the two
    agree in distribution (tests/speedups/test_dropout.py), not mask by mask."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        self.p = float(p)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu" or torch.compiler.is_compiling():
            # CUDA has a fused dropout kernel; under torch.compile Inductor draws its own mask
            # (Tensor.random_ would break the graph)
            return F.dropout(x, self.p, training=True)
        return x * dropout_noise(x.shape, self.p, x.device, x.dtype)

    def extra_repr(self) -> str:
        return f"p={self.p}"
