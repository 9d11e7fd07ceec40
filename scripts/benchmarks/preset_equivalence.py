"""Two commits train each preset alike: the same 30 updates, bit for bit (issue 60, item 7).

Each commit is exported with `git archive` into its own folder and trains each
preset there for `--steps` updates with a fixed seed, in a fresh run folder and
a fresh process (`python -m nmt.train`, the commit's own code first on
PYTHONPATH). Then the two runs of a preset are compared: every metrics record
(timings left out), every tensor of `checkpoints/last.pt` (`torch.equal`) and
the order of its keys. Prints one table row per preset and the command.

    python -m scripts.benchmarks.preset_equivalence --before 2d2402f --after HEAD \
        --data-path DATA/multi30k --out /tmp/equivalence
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import torch

from scripts.out_path import ready_folder

ROOT = Path(__file__).resolve().parents[2]
PRESETS = ("quickstart", "first_run", "rnn_bahdanau", "transformer_small")
TIMING_WORDS = ("per_s", "second", "elapsed", "minute", "time", "wall")


def export(commit: str, folder: Path) -> str:
    """The commit's tree in `folder`; returns its full hash."""
    full = subprocess.run(["git", "-C", str(ROOT), "rev-parse", commit], check=True, capture_output=True,
                          text=True).stdout.strip()
    folder.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", full], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return full


def train(code: Path, preset: str, run_dir: Path, steps: int, data_path: str | None) -> None:
    overrides = [f"experiment={preset}", f"trainer.max_steps={steps}", f"trainer.val_every={steps}",
                 "trainer.log_every=1", "trainer.val_max_sentences=4", "trainer.heatmap_sentences=0",
                 "trainer.test_max_sentences=0", "trainer.seed=7", "trainer.max_minutes=null",
                 f"hydra.run.dir={run_dir}", f"cache_dir={run_dir.parent / 'cache'}"]
    if preset != "quickstart" and data_path:
        overrides.append(f"data.path={data_path}")
    env = {**os.environ, "PYTHONPATH": str(code), "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "nmt.train", *overrides], cwd=code, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def metrics(run_dir: Path) -> list[dict]:
    """The run's metrics records, the timing fields left out."""
    lines = (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [{k: v for k, v in json.loads(line).items() if not any(w in k for w in TIMING_WORDS)}
            for line in lines if line.strip()]


def tensors(value, prefix=""):
    """(path, tensor) for every tensor in a nested checkpoint, in order."""
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from tensors(item, f"{prefix}/{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from tensors(item, f"{prefix}/{index}")


def compare(before: Path, after: Path) -> tuple[str, str, str]:
    same_metrics = "equal" if metrics(before) == metrics(after) else "DIFFERENT"
    old = torch.load(before / "checkpoints" / "last.pt", map_location="cpu", weights_only=False)
    new = torch.load(after / "checkpoints" / "last.pt", map_location="cpu", weights_only=False)
    old_t, new_t = list(tensors(old)), list(tensors(new))
    equal = len(old_t) == len(new_t) and all(a == c and torch.equal(b, d) for (a, b), (c, d) in zip(old_t, new_t))
    keys = "equal" if list(old) == list(new) else "DIFFERENT"
    return same_metrics, f"{'equal' if equal else 'DIFFERENT'} ({len(new_t)} tensors)", keys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--data-path", help="local Multi30k folder for the presets that train on it")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=PRESETS)
    parser.add_argument("--out", type=Path, required=True, help="a scratch folder for the two trees and the runs")
    args = parser.parse_args(argv)
    args.out = ready_folder(args.out, "preset_equivalence")
    commits = {side: export(getattr(args, side), args.out / side / "code") for side in ("before", "after")}
    print(f"before {commits['before'][:12]}, after {commits['after'][:12]}, {args.steps} updates, seed 7")
    print("| preset | metrics records | last.pt tensors | checkpoint keys |\n| --- | --- | --- | --- |")
    for preset in args.presets:
        runs = {side: args.out / side / "runs" / preset for side in commits}
        for side, run_dir in runs.items():
            train(args.out / side / "code", preset, run_dir, args.steps, args.data_path)
        print(f"| {preset} | " + " | ".join(compare(runs["before"], runs["after"])) + " |", flush=True)
    print("command: python -m scripts.benchmarks.preset_equivalence " + shlex.join(argv or sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
