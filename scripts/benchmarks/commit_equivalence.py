"""Do two commits train a study record's run alike? Same processor, same command, bit for bit.

    python -m scripts.benchmarks.commit_equivalence \
        --record benchmarks/attention_study/multi30k/records/bahdanau-guided/seed1.json \
        --commit d459c95 --commit 619a12a --commit HEAD --steps 200 --jobs 2 \
        --out benchmarks/attention_study/multi30k/commit_equivalence.json

A study record keeps the overrides it was trained with (its `common` and
`overrides`, and its seed). For each --commit this checks out a worktree of
that commit (git worktree add --detach, removed afterwards) and runs, from it,

    python -m nmt.train COMMON OVERRIDES trainer.seed=SEED

with trainer.max_steps and trainer.val_every set to --steps (one validation,
then the test set), its own cache_dir and run folder, one thread, each run
pinned to a core of its own (--jobs runs at a time). It then compares every
run with the first commit's: the weights of best.pt tensor for tensor
(torch.equal), and the validation record's figures (step, loss, perplexity,
BLEU, chrF, learning rate).
Equal weights say the commits compute the same training on this processor;
they say nothing of another processor, whose vector units sum in another
order. It prints the verdicts and the command, and writes JSON (--out).
"""

import argparse
import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from nmt_study.machine import cpu_fingerprint
from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ("step", "loss", "perplexity", "bleu", "chrf", "lr")  # what the computation gives (not timings,
# nor fields a later commit logs too)
RUNNING: set[subprocess.Popen] = set()  # the training runs under way, stopped with this script
STOPPING = threading.Event()  # set once: no training run starts after it
STARTING = threading.Lock()  # a run starts, or the runs are stopped, never both at once
REPLACED = ("trainer.max_steps=", "trainer.val_every=", "cache_dir=", "hydra.run.dir=")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record", required=True, help="a study record (records/NAME/seedN.json)")
    parser.add_argument("--commit", action="append", required=True, help="a commit to train at (two or more)")
    parser.add_argument("--steps", type=int, default=200, help="updates of each run, then one validation")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time, each pinned to a core of its own")
    parser.add_argument("--data-path", help="data.path for every run, instead of the record's")
    parser.add_argument("--out", help="JSON file of the verdicts")
    parser.add_argument("--work", help="folder for the worktrees and runs (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    if len(args.commit) < 2 or args.steps < 1 or args.jobs < 1:
        parser.error("give two or more --commit, and --steps and --jobs of at least 1")
    if not Path(args.record).is_file():
        parser.error(f"--record {args.record}: no such file (a study record, records/NAME/seedN.json)")
    return args


def git(*words: str, cwd=ROOT) -> str:
    done = subprocess.run(["git", *words], cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"git {' '.join(words)}: {done.stderr.strip()}")
    return done.stdout.strip()


def train_overrides(record: dict, steps: int, run_dir: Path, cache: Path, data_path: str | None) -> list[str]:
    """The record's own overrides, with the budget, the cache and the run folder of this check."""
    common = [o for o in record["common"] if not o.startswith(REPLACED)]
    if data_path:
        common = [o for o in common if not o.startswith("data.path=")] + [f"data.path={data_path}"]
    return [
        *common,
        *record["overrides"],
        f"trainer.seed={record['seed']}",
        f"trainer.max_steps={steps}",
        f"trainer.val_every={steps}",
        f"cache_dir={cache}",
        f"hydra.run.dir={run_dir}",
    ]


def train_at(number: int, commit: str, core: int, record: dict, args, work: Path) -> dict:
    """Train the record's run from a worktree of `commit` (the `number`th asked
    for); its folder and its validation record."""
    full = git("rev-parse", commit)
    tree, run_dir = work / f"tree-{number}-{full[:12]}", work / f"run-{number}-{full[:12]}"
    git("worktree", "add", "--detach", str(tree), full)
    try:
        command = [
            sys.executable,
            "-m",
            "nmt.train",
            *train_overrides(record, args.steps, run_dir, work / f"cache-{number}", args.data_path),
        ]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
        with STARTING:
            if STOPPING.is_set():  # stopped while this worktree was being made
                sys.exit("stopped")
            child = subprocess.Popen(
                ["taskset", "-c", str(core), *command],
                cwd=tree,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            RUNNING.add(child)
        try:
            _, stderr = child.communicate()
        finally:
            RUNNING.discard(child)
        if child.returncode:
            sys.exit(f"training at {commit} failed:\n{stderr[-2000:]}")
    finally:
        git("worktree", "remove", "--force", str(tree))
    lines = (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    validation = next(json.loads(line) for line in reversed(lines) if "bleu" in json.loads(line))
    return {
        "commit": commit,
        "resolved": full[:12],
        "run_dir": run_dir,
        "validation": {k: validation.get(k) for k in FIGURES},
        "command": shlex.join(["python", *command[1:]]),
    }


def stopped(signum: int, frame) -> None:
    sys.exit(
        f"commit_equivalence: stopped by {signal.Signals(signum).name}; its training runs were stopped "
        "and its worktrees removed"
    )


def same_weights(a: Path, b: Path) -> bool:
    first, second = (torch.load(p, weights_only=True, map_location="cpu")["model"] for p in (a, b))
    return sorted(first) == sorted(second) and all(torch.equal(first[k], second[k]) for k in first)


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out = ready_file(args.out, "commit_equivalence") if args.out else None
    try:
        record = json.loads(Path(args.record).read_text(encoding="utf-8"))
        record["common"], record["overrides"], record["seed"], record["name"]
    except (ValueError, KeyError, TypeError) as error:
        sys.exit(f"--record {args.record} is not a study record ({type(error).__name__}: {error})")
    free = queue.Queue()
    for core in sorted(os.sched_getaffinity(0))[: args.jobs]:
        free.put(core)

    def on_a_free_core(number: int, commit: str) -> dict:
        core = free.get()
        try:
            return train_at(number, commit, core, record, args, work)
        finally:
            free.put(core)

    for signum in (signal.SIGTERM, signal.SIGHUP):  # as Ctrl-C: the runs stopped, the worktrees removed
        signal.signal(signum, stopped)
    with tempfile.TemporaryDirectory(prefix="commit_equivalence_") as folder, ThreadPoolExecutor(free.qsize()) as pool:
        work = Path(args.work or folder)
        work.mkdir(parents=True, exist_ok=True)
        try:
            runs = list(pool.map(on_a_free_core, range(len(args.commit)), args.commit))
        except BaseException:  # the runs not started are cancelled by map
            with STARTING:
                STOPPING.set()
                for child in list(RUNNING):  # each thread then removes its worktree
                    child.terminate()
            raise
        first = runs[0]
        for run in runs:
            run["same_weights_as_first"] = same_weights(
                first["run_dir"] / "checkpoints" / "best.pt", run["run_dir"] / "checkpoints" / "best.pt"
            )
            run["same_validation_as_first"] = run["validation"] == first["validation"]
        for run in runs:
            del run["run_dir"]  # a temporary folder
    for run in runs:
        print(
            f"{run['commit']} ({run['resolved']}): weights {'equal' if run['same_weights_as_first'] else 'DIFFER'}"
            f", validation {'equal' if run['same_validation_as_first'] else 'DIFFERS'} "
            f"(BLEU {run['validation']['bleu']:.4f}, loss {run['validation']['loss']:.6f})",
            flush=True,
        )
    result = {
        "command": "python -m scripts.benchmarks.commit_equivalence " + shlex.join(sys.argv[1:] if argv is None else argv),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": cpu_fingerprint(),
        "record": record["name"],
        "seed": record["seed"],
        "record_commit": record.get("commit"),
        "record_cpu": record.get("cpu"),
        "steps": args.steps,
        "runs": runs,
        "all_equal": all(r["same_weights_as_first"] and r["same_validation_as_first"] for r in runs),
    }
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{result['command']}\n(all equal: {result['all_equal']})")
    return result


if __name__ == "__main__":
    main()
