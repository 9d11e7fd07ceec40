"""The matrix products of a transformer_small update, torch's (MKL on x86 wheels)
against numpy's OpenBLAS (trainer.matmul=openblas), on this CPU.

    taskset -c 1 python -m scripts.benchmarks.bench_gemm --threads 1 --out benchmarks/bench_gemm.json

For each nn.Linear shape of `transformer_small` (d 256, ff 1024, an 8k
vocabulary) and a batch of --rows positions, the three products of a training
update as nmt.speedups.openblas_linear computes them:

    forward    Y  = X W^T       (rows, in) x (in, out)
    input      dX = dY W        (rows, out) x (out, in)
    weight     dW = dY^T X      (out, rows) x (rows, in)

each timed with torch (`F.linear`, `mm`, as autograd calls them) and with
`np.matmul` into a preallocated output, in turns (torch, numpy, torch, ...)
so that the machine's drift falls on both; the best of --repeats windows of
about --window seconds each. Prints GFLOPS per product and backend, the ratio
numpy / torch, and the ratio of the time all of an update's products take
(each layer counted as often as transformer_small runs it, every batch of
--rows positions).
"""

import argparse
import json
import shlex
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from nmt.base.cli_checks import finite_float, positive_int
from nmt.base.provenance import git_commit
from nmt.speedups.openblas_linear import openblas_controller
from nmt.base.device import cpuinfo_fields, read_cpuinfo
from scripts.out_path import ready_file

# transformer_small's nn.Linear layers: (in, out) and how many an update runs (3 encoder layers with
# 4 attention projections, 3 decoder layers with 8; a feed-forward's two in each of the 6; one output)
SHAPES = {
    "attention projection": (256, 256, 36),
    "feed-forward in": (256, 1024, 6),
    "feed-forward out": (1024, 256, 6),
    "output layer": (256, 8000, 1),
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=positive_int, default=4096, help="positions a batch (data.batch_tokens)")
    parser.add_argument("--threads", type=positive_int, default=1, help="torch's and OpenBLAS's threads")
    parser.add_argument("--repeats", type=positive_int, default=5, help="timed windows a product and backend")
    parser.add_argument("--window", type=positive_seconds, default=0.3, help="seconds a window")
    parser.add_argument("--out", default="", help="a JSON file for the figures")
    return parser.parse_args(argv)


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds above 0."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not above 0")
    return value


def products(rows: int, fan_in: int, fan_out: int) -> dict:
    """name -> (torch's call, numpy's call, FLOPs) for one layer's three products."""
    x, w, dy = torch.randn(rows, fan_in), torch.randn(fan_out, fan_in), torch.randn(rows, fan_out)
    y, dx, dw = torch.empty(rows, fan_out), torch.empty(rows, fan_in), torch.empty(fan_out, fan_in)
    flops = 2 * rows * fan_in * fan_out
    return {
        "forward": (lambda: F.linear(x, w), lambda: np.matmul(x.numpy(), w.numpy().T, out=y.numpy()), flops),
        "input": (lambda: dy.mm(w), lambda: np.matmul(dy.numpy(), w.numpy(), out=dx.numpy()), flops),
        "weight": (lambda: dy.t().mm(x), lambda: np.matmul(dy.numpy().T, x.numpy(), out=dw.numpy()), flops),
    }


def best_rate(call, flops: int, window: float) -> float:
    """GFLOPS of `call` over one window of about `window` seconds."""
    reps, start = 0, time.perf_counter()
    while time.perf_counter() - start < window:
        call()
        reps += 1
    return flops * reps / (time.perf_counter() - start) / 1e9


def main(argv=None) -> dict:
    args = parse_args(argv)
    out = ready_file(args.out, "bench_gemm") if args.out else None
    blas = openblas_controller()
    if blas is None:
        sys.exit("bench_gemm: numpy here is not built on OpenBLAS; nothing to compare")
    torch.set_num_threads(args.threads)
    blas.limit(limits=args.threads)
    command = "python -m scripts.benchmarks.bench_gemm " + shlex.join(sys.argv[1:] if argv is None else argv)
    rows, total = [], {"torch": 0.0, "numpy": 0.0}
    for layer, (fan_in, fan_out, count) in SHAPES.items():
        for name, (by_torch, by_numpy, flops) in products(args.rows, fan_in, fan_out).items():
            by_torch(), by_numpy()  # warm
            rates = {"torch": [], "numpy": []}
            for _ in range(args.repeats):
                rates["torch"].append(best_rate(by_torch, flops, args.window))
                rates["numpy"].append(best_rate(by_numpy, flops, args.window))
            row = {
                "layer": layer,
                "product": name,
                "shape": [args.rows, fan_in, fan_out],
                "count": count,
                "torch_gflops": round(max(rates["torch"]), 1),
                "numpy_gflops": round(max(rates["numpy"]), 1),
            }
            row["ratio"] = round(row["numpy_gflops"] / row["torch_gflops"], 3)
            rows.append(row)
            total["torch"] += count * flops / row["torch_gflops"]  # seconds x 1e9
            total["numpy"] += count * flops / row["numpy_gflops"]
            print(
                f"{layer:<21} {name:<8} torch {row['torch_gflops']:>6.1f}  numpy {row['numpy_gflops']:>6.1f} "
                f"GFLOPS  ({row['ratio']:.2f}x)",
                flush=True,
            )
    overall = round(total["torch"] / total["numpy"], 3)
    print(f"an update's products, torch's time / numpy's: {overall:.2f}x\n{command}")
    figures = {
        "command": command,
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpu_vendor": cpuinfo_fields(read_cpuinfo()).get("vendor_id", ""),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "openblas": [lib["version"] for lib in blas.info()],
        "threads": args.threads,
        "torch_uses_mkl": torch.backends.mkl.is_available(),
        "products": rows,
        "overall_ratio": overall,
    }
    if out:
        out.write_text(json.dumps(figures, indent=1) + "\n")
        print(f"(figures in {out})")
    return figures


if __name__ == "__main__":
    main()
