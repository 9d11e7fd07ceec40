"""Model FLOPs of a training epoch and the card's measured matrix ceiling, for
gpu_check's share-of-peak figures.

    flops = count_update_flops(trainer, batches)   # forward + backward of the epoch's batches
    tflops = matmul_ceiling(torch.device("cuda"))  # bf16 8192^3 products on random data
"""

import time

import torch
from torch.utils.flop_counter import FlopCounterMode

SAMPLES = 3        # batches counted; the rest are scaled by padded positions


def padded_positions(batch) -> int:
    """Positions the model computes on: B * (S + T)."""
    return batch.src.numel() + batch.tgt[:, :-1].numel()


def count_update_flops(trainer, batches) -> float:
    """Forward and backward FLOPs of `batches`, as torch.utils.flop_counter counts
    them (matrix products and attention) on SAMPLES of them run eagerly, scaled by
    padded positions to all; the weights and the optimiser are left as they were."""
    if not batches:
        return 0.0
    picks = [batches[i * (len(batches) - 1) // max(1, SAMPLES - 1)] for i in range(min(SAMPLES, len(batches)))]
    compiled, trainer.forward = trainer.forward, trainer.parallel     # the counter sees eager ops only
    counted = positions = 0
    try:
        for batch in picks:
            counts = {"tokens": max(1, batch.n_tgt_tokens), "sentences": len(batch), "linked": 1}
            counter = FlopCounterMode(display=False)
            with counter:
                loss, _ = trainer._batch_loss(batch, counts, {})
                loss.backward()
            trainer.optimizer.zero_grad(set_to_none=True)
            counted += counter.get_total_flops()
            positions += padded_positions(batch)
    finally:
        trainer.forward = compiled
    return counted / positions * sum(padded_positions(b) for b in batches)


def matmul_ceiling(device, size: int = 8192, repeats: int = 10) -> float:
    """TFLOP/s of bf16 size^3 matrix products on random data, after three warm-ups."""
    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize(device)
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    torch.cuda.synchronize(device)
    return round(2 * size ** 3 * repeats / (time.perf_counter() - started) / 1e12, 1)
