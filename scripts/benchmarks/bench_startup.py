"""How long `nmt-translate` takes to answer one sentence from a shell, start-up included.

    flock /work/notes/core1.lock taskset -c 1 python -m scripts.benchmarks.bench_startup \
        --checkpoint CT2_FOLDER --checkpoint BEST.pt --runs 5

For each checkpoint (a folder from nmt.export, served by CTranslate2, or a
.pt, served by nmt's own decoder) it runs

    echo SENTENCE | nmt-translate --checkpoint PATH

--runs times warm (files in the page cache: one untimed run first) and
--runs times cold (the page cache dropped before each run with
`echo 3 > /proc/sys/vm/drop_caches`, which needs root; without it the cold
rows are left out and the JSON says why). It prints the median and every run's wall
time, and whether the process imported torch (`-X importtime`), and writes JSON (--out).
Where a command imports torch, `python -c "import torch"` is timed the same way beside it:
the floor of any start that needs torch on this machine.

--against TREE compares two commits on this machine: `python -m nmt.translate`
run from TREE (a git worktree of the other commit) and from this checkout,
alternating, --runs warm runs each, and the ratio of the medians (below 1:
this checkout starts faster).
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from nmt.base.provenance import git_commit
from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]
SENTENCE = "Ein Mann fährt mit dem Fahrrad durch die Stadt."


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", action="append", required=True, help="a CTranslate2 folder or a .pt")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sentence", default=SENTENCE)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "startup.json"))
    parser.add_argument(
        "--against",
        metavar="TREE",
        help="a checkout of another commit (a git worktree): `python -m nmt.translate` run from it "
        "and from this checkout, alternating warm run by warm run, and the ratio of the medians",
    )
    args = parser.parse_args(argv)
    if args.against and not (Path(args.against) / "nmt" / "translate.py").is_file():
        parser.error(f"--against {args.against}: not a checkout of nmt (no nmt/commands/translate.py in it)")
    return args


def command_for(checkpoint: str) -> list[str]:
    translate = Path(sys.executable).with_name("nmt-translate")
    return [str(translate), "--checkpoint", checkpoint]


def drop_caches() -> bool:
    """Empty the page cache (root only); False where that is not allowed."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def module_command(checkpoint: str) -> list[str]:
    """The command as run from a checkout (its working directory): that checkout's nmt."""
    return [sys.executable, "-m", "nmt.translate", "--checkpoint", checkpoint]


def timed_run(command: list[str], sentence: str, cwd=None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(
        command,
        input=(sentence + "\n").encode(),
        capture_output=True,
        cwd=cwd,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"failed: {shlex.join(command)}\n{done.stderr.decode()[-2000:]}")
    return seconds, done.stdout.decode().strip()


def imports_torch(command: list[str], sentence: str) -> bool:
    """Whether the command's process imports torch, from python's -X importtime log."""
    python = Path(sys.executable)
    code = "import sys; from nmt.commands.translate import cli; sys.argv[0] = 'nmt-translate'; cli()"
    done = subprocess.run(
        [str(python), "-X", "importtime", "-c", code, *command[1:]],
        input=(sentence + "\n").encode(),
        capture_output=True,
    )
    return any(
        line.split("|")[-1].strip() == "torch"
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:")
    )


def alternated(checkpoint: str, args) -> dict:
    """Warm runs of this checkout's and --against's nmt.translate, one after
    the other `--runs` times (a machine's drift then falls on both alike)."""
    command, trees = module_command(checkpoint), {"ours": ROOT, "theirs": Path(args.against).resolve()}
    times = {name: [] for name in trees}
    for tree in trees.values():
        timed_run(command, args.sentence, cwd=tree)  # warms the page cache
    for _ in range(args.runs):
        for name, tree in trees.items():
            times[name].append(timed_run(command, args.sentence, cwd=tree)[0])
    medians = {name: statistics.median(values) for name, values in times.items()}
    commit = (
        subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=trees["theirs"], capture_output=True, text=True
        ).stdout.strip()
        or "unknown"
    )
    print(
        f"{checkpoint}: python -m nmt.translate, warm median {medians['ours']:.3f} s here against "
        f"{medians['theirs']:.3f} s at {commit} ({args.against}), ratio {medians['ours'] / medians['theirs']:.3f}",
        flush=True,
    )
    return {
        "tree": args.against,
        "commit": commit,
        "command": f"echo {shlex.quote(args.sentence)} | {shlex.join(['python', *command[1:]])}  (from each checkout)",
        "ours_warm_s": [round(t, 3) for t in times["ours"]],
        "theirs_warm_s": [round(t, 3) for t in times["theirs"]],
        "ours_median_s": round(medians["ours"], 3),
        "theirs_median_s": round(medians["theirs"], 3),
        "ratio": round(medians["ours"] / medians["theirs"], 3),
    }


def warm_and_cold(command: list[str], sentence: str, runs: int) -> tuple[dict, str]:
    """`runs` warm runs (after one that fills the page cache), then `runs` cold ones, each
    after the page cache is dropped (none without root); the times, medians and the output."""
    timed_run(command, sentence)  # warms the page cache
    warm = [timed_run(command, sentence)[0] for _ in range(runs)]
    cold, output = [], ""
    for _ in range(runs):
        if not drop_caches():
            break
        seconds, output = timed_run(command, sentence)
        cold.append(seconds)
    return {
        "warm_s": [round(s, 3) for s in warm],
        "warm_median_s": round(statistics.median(warm), 3),
        "cold_s": [round(s, 3) for s in cold],
        "cold_median_s": round(statistics.median(cold), 3) if cold else None,
    }, output


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out = ready_file(args.out, "bench_startup")
    rows = []
    for checkpoint in args.checkpoint:
        command = command_for(checkpoint)
        times, output = warm_and_cold(command, args.sentence, args.runs)
        row = {
            "checkpoint": checkpoint,
            "command": f"echo {shlex.quote(args.sentence)} | {shlex.join(command)}",
            **times,
            "output": output or timed_run(command, args.sentence)[1],
            "imports_torch": imports_torch(command, args.sentence),
        }
        if args.against:
            row["against"] = alternated(checkpoint, args)
        rows.append(row)
        print(
            f"{checkpoint}: warm median {row['warm_median_s']} s {row['warm_s']}, cold median "
            f"{row['cold_median_s']} s {row['cold_s']}, imports torch: {row['imports_torch']}",
            flush=True,
        )
    floor = None
    if any(row["imports_torch"] for row in rows):  # what no command that imports torch can beat
        command = [sys.executable, "-c", "import torch"]
        floor = {"command": shlex.join(["python", *command[1:]]), **warm_and_cold(command, "", args.runs)[0]}
        print(
            f"import torch alone: warm median {floor['warm_median_s']} s, cold median {floor['cold_median_s']} s",
            flush=True,
        )
    record = {
        "command": "python -m scripts.benchmarks.bench_startup " + shlex.join(sys.argv[1:] if argv is None else argv),
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cores_allowed": sorted(os.sched_getaffinity(0)),
        "runs": args.runs,
        "rows": rows,
        "import_torch_alone": floor,
        "cold_note": None if all(r["cold_s"] for r in rows) else "page cache not dropped (needs root)",
    }
    Path(args.out).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"{record['command']}\n(figures in {args.out})")
    return record


if __name__ == "__main__":
    main()
