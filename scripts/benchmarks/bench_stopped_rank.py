"""How long rank 0 of a two-rank torchrun run lives on after rank 1 is SIGSTOPped.

    taskset -c 0 python -m scripts.benchmarks.bench_stopped_rank --rounds 3 --peer-timeout 10 --out stopped_rank.json
    taskset -c 0 python -m scripts.benchmarks.bench_stopped_rank --code /tmp/before --rounds 3 --out before.json

Each round starts `torchrun --nproc_per_node=2 -m nmt.train` on the quickstart
model (CPU, gloo), waits until train.log shows step 3, stops rank 1 with SIGSTOP
and measures the seconds until rank 0's process is gone (polled every 0.1 s).
`--code DIR` runs the nmt found in DIR (a `git archive` of an older commit, say)
instead of this checkout. Every process of the round is killed after it.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from pathlib import Path

from nmt import finite_float
from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]
TINY = ("experiment=quickstart", "trainer.val_max_sentences=10", "trainer.heatmap_sentences=0",
        "trainer.log_every=1", "trainer.keep_last=0", "trainer.device=cpu", "trainer.max_steps=100000",
        "trainer.val_every=100000")


def rank_pid(torchrun_pid: int, rank: int) -> int | None:
    """The pid of torchrun's worker RANK (a child of torchrun with RANK=rank in its environment), if alive."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with suppress(OSError):
            parent = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
            environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            if parent == torchrun_pid and f"RANK={rank}".encode() in environ:
                return int(pid)
    return None


def one_round(code: Path, cache_dir: Path, work: Path, peer_timeout: float) -> dict:
    run_dir = work / "run"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--log-dir={work / 'logs'}",
               "--nproc_per_node=2", "-m", "nmt.train", *TINY, f"cache_dir={cache_dir}", f"hydra.run.dir={run_dir}",
               f"trainer.peer_timeout_s={peer_timeout:g}"]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", PYTHONPATH=str(code))
    process = subprocess.Popen(command, cwd=code, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300
        log = run_dir / "train.log"
        while not log.is_file() or "step 3 " not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the two ranks never reached step 3: " + process.stderr.read().decode()[-2000:])
            time.sleep(0.2)
        rank0, rank1 = rank_pid(process.pid, 0), rank_pid(process.pid, 1)
        os.kill(rank1, signal.SIGSTOP)
        stopped_at = time.monotonic()
        while rank_pid(process.pid, 0) == rank0 and time.monotonic() - stopped_at < 300:
            time.sleep(0.1)
        ended_after = time.monotonic() - stopped_at
    finally:
        for pid in (rank_pid(process.pid, 0), rank_pid(process.pid, 1), process.pid):
            with suppress(ProcessLookupError, TypeError):
                os.kill(pid, signal.SIGKILL)
        err = process.communicate()[1].decode(errors="replace")
    lines = [line for line in err.splitlines() if line.startswith("nmt: error:")]
    return {"rank0_ended_after_s": round(ended_after, 2), "nmt_error_lines": lines}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--code", type=Path, default=ROOT, help="the folder whose nmt runs (default: this one)")
    parser.add_argument("--peer-timeout", type=finite_float, default=10.0, help="trainer.peer_timeout_s")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cache-dir", type=Path, default=None, help="the vocabulary cache (default: a fresh one)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON record to write")
    args = parser.parse_args()
    args.out = ready_file(args.out, "bench_stopped_rank")
    with tempfile.TemporaryDirectory(prefix="bench_stopped_rank.") as tmp:
        cache = args.cache_dir or Path(tmp) / "cache"
        rounds = []
        for number in range(args.rounds):
            work = Path(tmp) / f"round{number}"
            work.mkdir()
            rounds.append(one_round(args.code.resolve(), cache, work, args.peer_timeout))
            print(json.dumps(rounds[-1]), flush=True)
    times = sorted(r["rank0_ended_after_s"] for r in rounds)
    record = {"code": str(args.code), "peer_timeout_s": args.peer_timeout, "rounds": rounds,
              "median_s": times[len(times) // 2], "command": " ".join(sys.argv)}
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"median {record['median_s']} s over {len(times)} rounds", flush=True)


if __name__ == "__main__":
    main()
