"""How long a validation's checkpoints take to write: one file linked under three names, against three files.

    taskset -c 1 python -m scripts.benchmarks.bench_checkpoint_writes \
        --checkpoint RUN/checkpoints/last.pt --dir outputs/bench_checkpoint_writes --rounds 7

A validation that improves writes `last.pt`, `best.pt` and `step_N.pt` of one
state. The trainer serialises it once, writes and syncs one file, and makes
the other two names hard links renamed into place (`save_checkpoint(...,
also=...)`). This times that against writing the three files one by one (three
`save_checkpoint` calls, each serialising, writing and syncing), alternating
round by round on the same state (a training checkpoint's whole state,
optimiser included) and the same folder, and prints the medians, their ratio
and the command. --dir must be on the disk a run writes to (a tmpfs would
make the syncs free).
"""

import argparse
import json
import shlex
import shutil
import statistics
import sys
import time
from pathlib import Path

from nmt.base.errors import NmtError
from nmt.base.provenance import git_commit
from nmt.store.checkpoints import load_checkpoint, save_checkpoint
from nmt_study.machine import cpu_fingerprint
from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("last.pt", "best.pt", "step_1.pt")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a training checkpoint (last.pt): the state written")
    parser.add_argument("--dir", required=True, help="an empty or new folder on the disk runs write to")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", help="JSON record (default: none)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if not Path(args.checkpoint).is_file():
        parser.error(f"--checkpoint {args.checkpoint}: no such file (a training checkpoint, RUN/checkpoints/last.pt)")
    if Path(args.dir).exists() and not Path(args.dir).is_dir():
        parser.error(f"--dir {args.dir}: not a folder")
    if Path(args.dir).exists() and any(Path(args.dir).iterdir()):
        parser.error(f"--dir {args.dir}: not empty (the benchmark writes and removes its own files there)")
    return args


def write_three(state: dict, folder: Path) -> float:
    started = time.perf_counter()
    for name in NAMES:
        save_checkpoint(state, folder / name)
    return time.perf_counter() - started


def write_linked(state: dict, folder: Path) -> float:
    started = time.perf_counter()
    save_checkpoint(state, folder / NAMES[0], also=[folder / name for name in NAMES[1:]])
    return time.perf_counter() - started


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out = ready_file(args.out, "bench_checkpoint_writes") if args.out else None
    try:
        state = load_checkpoint(args.checkpoint)
    except NmtError as error:
        sys.exit(f"bench_checkpoint_writes: {error}")
    state.pop("format_version", None)
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    three, linked = [], []
    try:
        write_linked(state, folder)  # untimed: the folder's first files
        for _ in range(args.rounds):
            three.append(write_three(state, folder))
            linked.append(write_linked(state, folder))
        size = (folder / NAMES[0]).stat().st_size
    finally:
        shutil.rmtree(folder)
    command = "python -m scripts.benchmarks.bench_checkpoint_writes " + shlex.join(sys.argv[1:] if argv is None else argv)
    result = {
        "command": command,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": git_commit(),
        "cpu": cpu_fingerprint(),
        "checkpoint_bytes": size,
        "three_files_s": three,
        "linked_s": linked,
        "three_files_median_s": statistics.median(three),
        "linked_median_s": statistics.median(linked),
        "ratio": statistics.median(linked) / statistics.median(three),
    }
    print(
        f"{size / 2**20:.1f} MiB checkpoint, {args.rounds} rounds alternated: three files "
        f"{result['three_files_median_s']:.3f} s, one file and two links {result['linked_median_s']:.3f} s "
        f"(median); ratio {result['ratio']:.2f}\n{command}"
    )
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
