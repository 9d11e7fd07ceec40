"""Where a training update's time goes on a GPU once its CUDA graphs are recorded.

    python -m scripts.benchmarks.gpu_update_profile --data data/multi30k --out OUT [override ...]

Builds the run as `python -m nmt.train` would (default: transformer_small in
bf16 with trainer.compile_mode=reduce-overhead and data.pad_to_multiple=8),
trains --batches batches of epoch 0 once (compiling and recording one graph
per shape), times the same batches again (replays only), then writes
torch.profiler tables of --profiled of them to OUT/update_profile.txt: by
self CPU time and by GPU time.
"""

import argparse
import tempfile
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from scripts.benchmarks.gpu_check import GRAPHS, compose_row
from scripts.out_path import ready_folder


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="data/multi30k")
    parser.add_argument("--out", required=True)
    parser.add_argument("--cache", default=None, help="cache_dir (sentencepiece models)")
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--profiled", type=int, default=10)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    ready_folder(args.out, "gpu_update_profile")
    from nmt.training.build import build_trainer

    overrides = args.overrides or ["experiment=transformer_small", "trainer.precision=bf16", *GRAPHS]
    device = torch.device("cuda")
    scratch = tempfile.TemporaryDirectory(prefix="gpu_update_profile_")  # the run folder (and cache); removed at exit
    cfg = compose_row([*overrides, f"data.path={args.data}"], device, Path(args.cache or f"{scratch.name}/cache"))
    trainer = build_trainer(cfg, Path(scratch.name) / "run")
    trainer.model.train()
    batches = trainer.data.train.batches(0)[: args.batches]
    lines = [f"overrides: {' '.join(overrides)}"]
    for label in ("first pass (compile, record)", "second pass (replay)"):
        started = time.perf_counter()
        for batch in batches:
            trainer.train_update([batch])
        torch.cuda.synchronize()
        seconds = time.perf_counter() - started
        lines.append(f"{label}: {len(batches)} updates in {seconds:.3f} s, {len(batches) / seconds:.1f} updates/s")
        print(lines[-1], flush=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for batch in batches[: args.profiled]:
            trainer.train_update([batch])
        torch.cuda.synchronize()
    table = prof.key_averages()
    lines += [
        "",
        "by self CPU time:",
        table.table(sort_by="self_cpu_time_total", row_limit=35),
        "",
        "by GPU time:",
        table.table(sort_by="self_device_time_total", row_limit=20),
    ]
    (Path(args.out) / "update_profile.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-4:-2])[:6000])


if __name__ == "__main__":
    main()
