"""Training speed of a preset, measured with the trainer's own update.

    python -m scripts.benchmarks.bench_train --preset transformer_small --steps 30 --warmup 5 data.path=../shared/data/multi30k

Builds the config, data and model exactly as `python -m nmt.train
experiment=PRESET [overrides]` does (it builds the Trainer with nmt.training.build.build_trainer
and calls its `train_update`), runs W warm-up updates, then times N updates
over the batches the run would see first, and prints:

    target tokens/s, source+target tokens/s, padded positions/s (src and tgt tensors), steps/s,
    minor page faults a timed update, peak RSS,
    padding (of the measured batches and of a whole epoch),
    matmul FLOPs per target token (torch.utils.flop_counter over forward+backward),
    achieved GFLOPS and its share of the matmul ceiling, which is measured in
    the same process (a 1024x1024 fp32 F.linear loop, before and after the timing;
    under trainer.precision=bf16 a bf16 loop as well, and the share of each;
    under trainer.matmul=openblas OpenBLAS's product, the one the layers use)

and writes them as JSON, with a torch.profiler table (top ops by self CPU
time over a few more updates) beside it: --out DIR (default benchmarks/).
"""

import argparse
import json
import resource
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from hydra import compose, initialize_config_dir
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode

from nmt import PAD_ID
from nmt.base.cli_checks import finite_float
from nmt.base.device import to_device
from nmt.base.provenance import git_commit
from nmt.speedups.openblas_linear import OpenBLASLinear, torch_products
from scripts.out_path import ready_folder

ROOT = Path(__file__).resolve().parents[2]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="transformer_small", help="a configs/experiment/*.yaml name")
    parser.add_argument("--steps", type=int, default=30, help="timed updates")
    parser.add_argument("--warmup", type=int, default=5, help="untimed updates first")
    parser.add_argument(
        "--flop-batches", type=int, default=4, help="batches the FLOPs are counted over (0: skip the FLOP count)"
    )
    parser.add_argument(
        "--ceiling-seconds",
        type=finite_float,
        default=2.0,
        help="time for each matmul-ceiling measurement (0: skip it)",
    )
    parser.add_argument("--profile-steps", type=int, default=3, help="updates under torch.profiler (0: none)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks"), help="folder for the JSON and profile")
    parser.add_argument("--tag", default="", help="suffix for the output file names")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, as for nmt.train")
    return parser.parse_args(argv)


def compose_config(preset: str, overrides: list[str]):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose(config_name="config", overrides=[f"experiment={preset}", *overrides])


def matmul_gflops(
    seconds: float = 2.0,
    n: int = 1024,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
    openblas: bool = False,
) -> float:
    """Best GFLOPS of an n x n product (fp32, or bf16 for trainer.precision=bf16)
    over repeated 0.25 s windows; on a GPU each product is waited for.

    The product is `F.linear(a, b)`, the call every `nn.Linear` of the model makes,
    so the ceiling is the rate the model's own layers can reach and a share of it
    stays at most 1: on a CPU without native bf16, torch 2.13 routes a bf16 `a @ b`
    through a kernel about 5x slower than the one `F.linear` uses (1.4 against 7
    GFLOPS on an AMD EPYC). One product warms up, so a slow dtype costs about two
    products beyond `seconds`. `openblas`: the product is OpenBLAS's, as
    trainer.matmul=openblas multiplies the model's layers (numpy, into a preallocated output)."""
    if seconds <= 0:
        return 0.0
    a, b = (torch.randn(n, n, dtype=dtype, device=device) for _ in range(2))
    wait = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    product = lambda: F.linear(a, b)
    if openblas:
        out = torch.empty(n, n, dtype=dtype)
        product = lambda: np.matmul(a.numpy(), b.numpy().T, out=out.numpy())
    product()
    wait()
    best, end = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        reps, start = 0, time.perf_counter()
        while time.perf_counter() - start < 0.25:
            product()
            wait()
            reps += 1
        best = max(best, 2 * n**3 * reps / (time.perf_counter() - start) / 1e9)
    return best


def count_flops(trainer, batches) -> tuple[float, int]:
    """Matmul FLOPs of forward + backward over `batches`, and their target tokens."""
    flops = tokens = 0
    for batch in batches:
        trainer.optimizer.zero_grad(set_to_none=True)
        counter = FlopCounterMode(display=False)
        with counter, torch_products(trainer.model):  # OpenBLAS's products are not aten's: count torch's
            src, tgt = to_device(batch.src, trainer.device), to_device(batch.tgt, trainer.device)
            out, penalty = trainer.parallel(src, tgt[:, :-1])  # eager: same FLOPs, countable
            loss = out.logits.float().log_softmax(-1).sum() + penalty  # any scalar: backward FLOPs
            loss.backward()
        flops += counter.get_total_flops()
        tokens += batch.n_tgt_tokens
    trainer.optimizer.zero_grad(set_to_none=True)
    return flops, tokens


def padding(batches) -> float:
    """Padding positions / all positions of the src and tgt tensors."""
    total = sum(b.src.numel() + b.tgt.numel() for b in batches)
    real = sum(int((b.src != PAD_ID).sum()) + int((b.tgt != PAD_ID).sum()) for b in batches)
    return 1 - real / total


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out = ready_folder(args.out, "bench_train")
    if args.threads:
        torch.set_num_threads(args.threads)
    command = "python -m scripts.benchmarks.bench_train " + shlex.join(sys.argv[1:] if argv is None else argv)
    from nmt.training.build import build_trainer
    from nmt.training.config_checks import check_config

    cfg = compose_config(args.preset, args.overrides)
    check_config(cfg)  # every rule, as nmt.train checks it, before any data is read
    with tempfile.TemporaryDirectory(prefix="bench_train_") as run_folder:  # the Trainer's; removed after
        return measure(args, command, cfg, build_trainer(cfg, Path(run_folder)))


def measure(args, command: str, cfg, trainer) -> dict:
    """Time args.steps updates of `trainer` (built from `cfg`) after args.warmup, against the
    matmul ceiling before and after; write the figures (and the profile) under args.out."""
    from nmt.models.build import count_parameters

    trainer.model.train()
    accumulate = max(1, int(cfg.trainer.accumulate))
    needed = (args.warmup + args.steps + args.profile_steps) * accumulate
    batches = []
    epoch = 0
    while len(batches) < needed:
        batches += trainer.data.train.batches(epoch)
        epoch += 1
    groups = [batches[i : i + accumulate] for i in range(0, needed, accumulate)]
    warm, timed = groups[: args.warmup], groups[args.warmup : args.warmup + args.steps]
    profiled = groups[args.warmup + args.steps :]

    # Under bf16 (trainer.precision=bf16, or auto resolved to it) the matrix products run in
    # bf16: a bf16 ceiling too.
    low = torch.bfloat16 if trainer.precision == "bf16" else None
    openblas = any(type(m) is OpenBLASLinear for m in trainer.model.modules())  # trainer.matmul=openblas
    ceiling_before = matmul_gflops(args.ceiling_seconds, openblas=openblas)
    low_before = matmul_gflops(args.ceiling_seconds, dtype=low) if low else 0.0
    for group in warm:
        trainer.train_update(group)
    tgt = src = 0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    for group in timed:
        result = trainer.train_update(group)
        tgt += result["tgt_tokens"]
        src += result["src_tokens"]
    elapsed = time.perf_counter() - start
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    ceiling_after = matmul_gflops(args.ceiling_seconds, openblas=openblas)
    low_after = matmul_gflops(args.ceiling_seconds, dtype=low) if low else 0.0

    timed_batches = [b for g in timed for b in g]
    sample = timed_batches[:: max(1, len(timed_batches) // max(1, args.flop_batches))][: args.flop_batches]
    flops, flop_tokens = count_flops(trainer, sample) if sample else (0, 1)
    flops_per_token = flops / flop_tokens
    ceiling = max(ceiling_before, ceiling_after)
    achieved = flops_per_token * tgt / elapsed / 1e9

    out = args.out
    stem = f"bench_train_{args.preset}{'_' + args.tag if args.tag else ''}"
    profile_path = out / f"{stem}_profile.txt"
    if profiled:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for group in profiled:
                trainer.train_update(group)
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30)
        profile_path.write_text(
            f"{command}\n{len(profiled)} updates under torch.profiler, top ops by self CPU time\n\n{table}\n"
        )

    figures = {
        "preset": args.preset,
        "overrides": args.overrides,
        "command": command,
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "parameters": count_parameters(trainer.model),
        "warmup_steps": args.warmup,
        "steps": args.steps,
        "accumulate": accumulate,
        "seconds": round(elapsed, 3),
        "tgt_tokens_per_s": round(tgt / elapsed, 1),
        "src_tgt_tokens_per_s": round((src + tgt) / elapsed, 1),
        "padded_positions_per_s": round(sum(b.src.numel() + b.tgt.numel() for b in timed_batches) / elapsed, 1),
        "steps_per_s": round(args.steps / elapsed, 4),
        "tgt_tokens_per_step": round(tgt / args.steps, 1),
        "page_faults_per_step": round(faults / args.steps),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "padding_measured_batches": round(padding(timed_batches), 4),
        "padding_epoch": round(trainer.data.train.padding_ratio(0), 4),
        "matmul_flops_per_tgt_token": round(flops_per_token),
        "achieved_gflops": round(achieved, 2),
        "matmul_ceiling_gflops": round(ceiling, 2),
        "matmul_ceiling_before_after": [round(ceiling_before, 2), round(ceiling_after, 2)],
        "share_of_ceiling": round(achieved / ceiling, 4) if ceiling and flops else None,
        "precision": trainer.precision,
        "matmul": "openblas" if openblas else "torch",
        **(
            {
                "matmul_ceiling_bf16_gflops": round(max(low_before, low_after), 2),
                "matmul_ceiling_bf16_before_after": [round(low_before, 2), round(low_after, 2)],
                "share_of_bf16_ceiling": round(achieved / max(low_before, low_after), 4)
                if flops and max(low_before, low_after)
                else None,
            }
            if low
            else {}
        ),
        "profile": str(profile_path) if profiled else None,
    }
    (out / f"{stem}.json").write_text(json.dumps(figures, indent=1) + "\n")
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    print(f"(figures in {out / f'{stem}.json'})")
    return figures


if __name__ == "__main__":
    main()
