"""Model FLOPs of a training epoch and the card's matrix ceiling, for gpu_check's
share-of-peak figures, from bench_train's counter and ceiling.

    flops = epoch_flops(trainer, batches)          # forward + backward of the epoch's batches
    tflops = matmul_ceiling(torch.device("cuda"))  # bf16 8192^3 products on random data
"""

import torch

from scripts.benchmarks.bench_train import count_flops, matmul_gflops

SAMPLES = 3  # batches counted; the rest are scaled by padded positions


def padded_positions(batch) -> int:
    """Positions the model computes on: B * (S + T)."""
    return batch.src.numel() + batch.tgt[:, :-1].numel()


def epoch_flops(trainer, batches) -> float:
    """Forward and backward FLOPs of `batches`: bench_train's count (matrix products and
    attention, eager) on SAMPLES of them, scaled by padded positions to all."""
    if not batches:
        return 0.0
    picks = [batches[i * (len(batches) - 1) // max(1, SAMPLES - 1)] for i in range(min(SAMPLES, len(batches)))]
    counted, _ = count_flops(trainer, picks)
    return counted / sum(map(padded_positions, picks)) * sum(map(padded_positions, batches))


def matmul_ceiling(device) -> float:
    """TFLOP/s of bf16 8192^3 products on random data, the best 0.25 s window of one second."""
    return round(matmul_gflops(1.0, 8192, torch.bfloat16, device) / 1000, 1)
