"""How long after start a Ctrl-C is not yet nmt's: SIGINT at fixed delays, counted by outcome.

    taskset -c 1 python -m scripts.benchmarks.ctrl_c_window --runs 20 --delays 0 0.01 0.02 0.05 0.1 0.15 0.2 0.3 0.4 0.5 0.6

Starts `python -m nmt.translate --checkpoint CKPT` (or --command) with its
standard input an open pipe, so it would wait for sentences, sends SIGINT
`delay` seconds after the start, and sorts what happened:

  nmt        `nmt: stopped by SIGINT` on stderr and exit 130: nmt's handler
  silent     ended by the signal itself, no output (status -2; a shell shows 130):
             before the interpreter installed its own handler
  fatal      "Fatal Python error: init_import_site": during `site` and the
             .pth files of site-packages, where a KeyboardInterrupt is fatal (exit 1)
  traceback  a KeyboardInterrupt traceback: after `site`, before nmt.base.signals.install()
  other      anything else (printed in full once)

Prints one row per delay with the counts, then the command; no file is written.
The window is the interpreter's start-up: no Python code of nmt runs before it,
so only its length can be measured, not shortened by nmt.
"""

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from nmt.base.cli_checks import finite_float

ROOT = Path(__file__).resolve().parents[2]


def outcome(code: int, stderr: str) -> str:
    if "nmt: stopped by SIGINT" in stderr and code == 130:
        return "nmt"
    if code == -signal.SIGINT and not stderr.strip():
        return "silent"
    if "Fatal Python error" in stderr:
        return "fatal"
    if "KeyboardInterrupt" in stderr:
        return "traceback"
    return "other"


def one_run(command: list[str], delay: float) -> tuple[str, int, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    # A background job of a non-interactive shell starts with SIGINT ignored, and an ignored
    # signal stays ignored through exec (a caught one is reset to the default): the command
    # must start as from a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=env
    )
    started = time.perf_counter()
    time.sleep(max(0.0, delay - (time.perf_counter() - started)))
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
        return "hung", process.returncode, stderr.decode(errors="replace")
    return (
        outcome(process.returncode, stderr.decode(errors="replace")),
        process.returncode,
        stderr.decode(errors="replace"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default=None, help="a .pt file (default: the newest under outputs/)")
    parser.add_argument("--command", help="the command instead of nmt.translate, one string (shell words)")
    parser.add_argument("--runs", type=int, default=10, help="runs per delay")
    parser.add_argument(
        "--delays", type=finite_float, nargs="+", default=[0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6]
    )
    args = parser.parse_args()
    command = (
        shlex.split(args.command)
        if args.command
        else [sys.executable, "-m", "nmt.translate", "--checkpoint", args.checkpoint or "missing.pt"]
    )
    kinds = ["silent", "fatal", "traceback", "nmt", "other", "hung"]
    print(f"{'delay s':>8} " + " ".join(f"{k:>9}" for k in kinds))
    shown = set()
    for delay in args.delays:
        counts = Counter()
        for _ in range(args.runs):
            kind, code, stderr = one_run(command, delay)
            counts[kind] += 1
            if kind in ("other", "hung") and kind not in shown:
                shown.add(kind)
                print(f"  {kind} (status {code}):\n" + stderr[-2000:], file=sys.stderr)
        print(f"{delay:>8.3f} " + " ".join(f"{counts[k]:>9}" for k in kinds), flush=True)
    print("command: taskset -c 1 python -m scripts.benchmarks.ctrl_c_window " + shlex.join(sys.argv[1:]))


if __name__ == "__main__":
    main()
