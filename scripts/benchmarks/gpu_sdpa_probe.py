"""Where a Transformer update's time goes on a GPU, per fused-attention backend set.

    python -m scripts.benchmarks.gpu_sdpa_probe        # on a GPU machine, Multi30k in data/multi30k

Builds transformer_small as `python -m nmt.train` does and, for each set of
F.scaled_dot_product_attention backends the model may use
(nmt.core.multihead.FUSED_BACKENDS), times 15 updates over
batches of shapes not seen before and then the same 15 again, in bf16 and
fp32; then a torch.profiler table of 3 bf16 updates with cuDNN allowed.
cuDNN's attention builds a plan for each new batch shape: benchmarks/gpu/README.md.
"""

import tempfile
import time
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from torch.nn.attention import SDPBackend
from torch.profiler import ProfilerActivity, profile

import nmt.core.multihead as transformer_attention
from nmt.base.config_files import CONFIGS
from nmt.training.build import build_trainer
from nmt.training.config_checks import check_config

ROOT = Path(__file__).resolve().parents[2]
B = SDPBackend
SCRATCH = tempfile.TemporaryDirectory(prefix="gpu_sdpa_probe_")  # the trainers' run folders; removed at exit
VARIANTS = {
    "cuDNN, flash, efficient, math": [B.CUDNN_ATTENTION, B.FLASH_ATTENTION, B.EFFICIENT_ATTENTION, B.MATH],
    "flash, efficient, math (nmt's)": [B.FLASH_ATTENTION, B.EFFICIENT_ATTENTION, B.MATH],
    "efficient": [B.EFFICIENT_ATTENTION],
    "cuDNN": [B.CUDNN_ATTENTION],
    "math": [B.MATH],
}


def build(precision: str):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                "experiment=transformer_small",
                f"data.path={ROOT / 'data/multi30k'}",
                f"trainer.precision={precision}",
                "trainer.device=cuda",
                "cache_dir=/tmp/gpu_sdpa_probe",
                "trainer.heatmap_sentences=0",
            ],
        )
    check_config(cfg)
    return build_trainer(cfg, Path(SCRATCH.name) / precision)


def seconds(trainer, batches) -> float:
    torch.cuda.synchronize()
    started = time.perf_counter()
    for batch in batches:
        trainer.train_update([batch])
    torch.cuda.synchronize()
    return time.perf_counter() - started


def main() -> None:
    for precision in ("bf16", "fp32"):
        trainer = build(precision)
        trainer.model.train()
        batches = iter(trainer.data.train.batches(0))
        for name, backends in VARIANTS.items():
            transformer_attention.FUSED_BACKENDS = backends
            fresh = [next(batches) for _ in range(15)]
            try:
                print(
                    f"{precision} {name}: 15 updates of new shapes {seconds(trainer, fresh):.3f} s, "
                    f"the same 15 again {seconds(trainer, fresh):.3f} s",
                    flush=True,
                )
            except RuntimeError as error:  # e.g. no cuDNN kernel for fp32
                print(f"{precision} {name}: {error}", flush=True)
        if precision == "bf16":
            transformer_attention.FUSED_BACKENDS = VARIANTS["cuDNN, flash, efficient, math"]
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(3):
                    trainer.train_update([next(batches)])
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=8))
        del trainer
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
