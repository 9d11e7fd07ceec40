"""Train one configuration and seed as its own `python -m nmt.train` process.

A failed run (non-zero exit, time-out) leaves `study_failed.txt` in its
folder with the exit status and the last lines of its output; the study
goes on. A folder with `summary.json` is finished and is not trained again,
so an interrupted study continues where it stopped. `study_trained.json`
names the commit and the processor that trained the folder: a record names
those, not the ones of the process that evaluated it, and a rerun that must train at
its own commit (--reproduce) trains again a folder trained at another.

Each run's contribution to the report is one JSON record beside the report,
`OUT/records/NAME/seedN.json` (its figures, validation curve, test hypotheses
and gallery panels): small enough to commit, and all the report is rebuilt
from. A finished record is never trained again, even where its run folder
(checkpoints) is gone, so a study continues on another machine from what is
committed; a failed record is retried.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from nmt.provenance import git_commit
from nmt.study.configs import StudyConfig
from nmt.study.machine import cpu_fingerprint

FAILED = "study_failed.txt"
TRAINED = "study_trained.json"    # {"commit": the code that trained the folder, "cpu": its processor}
# A run whose folder (its output, train.log, metrics.jsonl and TensorBoard's event files,
# which the trainer adds to every trainer.log_every updates and flushes at least every two
# minutes) has not grown for this long is taken as hung and stopped. Validation lines alone
# are too rare: on a core shared three ways 200 updates took 20 minutes.
STALL_MINUTES = 30.0


def record_path_of(out_dir: Path, name: str, seed: int) -> Path:
    return Path(out_dir) / "records" / name / f"seed{seed}.json"


def read_record(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_record(path: Path, record: dict) -> None:
    from nmt.atomic import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8"))


def record_done(path: Path, commit: str | None = None) -> bool:
    """A finished record; with `commit`, one whose run that commit trained."""
    record = read_record(path)
    return bool(record) and record.get("status") == "finished" and commit in (None, record.get("commit"))


def run_dir_of(runs_dir: Path, name: str, seed: int) -> Path:
    return Path(runs_dir) / name / f"seed{seed}"


def train_command(config: StudyConfig, seed: int, run_dir: Path, common: list[str]) -> list[str]:
    return [sys.executable, "-m", "nmt.train", *common, *config.overrides, f"trainer.seed={seed}",
            f"hydra.run.dir={run_dir}"]


def status(run_dir: Path) -> str:
    """finished | failed | missing"""
    if (run_dir / "summary.json").exists() and (run_dir / "checkpoints" / "best.pt").exists():
        return "finished"
    if (run_dir / FAILED).exists():
        return "failed"
    return "missing"


def failure_reason(run_dir: Path) -> str:
    path = run_dir / FAILED
    if not path.exists():
        return "not run"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[0] if lines else "failed"


def size_of(path: Path) -> int:
    """Bytes in a file, or in every file under a folder; 0 for what is not there."""
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return path.stat().st_size if path.exists() else 0


def run_watched(command: list[str], log_path: Path, env: dict, timeout_s: float | None,
                stall_s: float, progress: tuple[Path, ...] = ()) -> tuple[int, str]:
    """Run `command` with its output in `log_path`; stop it when neither its output
    nor the files in or under `progress` (files or folders) have grown for
    `stall_s` seconds, or after `timeout_s` (None: no limit). -> (exit status,
    what happened)."""
    started = time.monotonic()
    watched = (log_path, *progress)
    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        size, grew = 0, time.monotonic()
        while process.poll() is None:
            time.sleep(min(5.0, stall_s / 4))
            now_size = sum(size_of(path) for path in watched)
            if now_size != size:
                size, grew = now_size, time.monotonic()
            stalled = time.monotonic() - grew > stall_s
            late = timeout_s is not None and time.monotonic() - started > timeout_s
            if stalled or late:
                process.kill()
                process.wait()
                return -1, (f"stopped: no output for {stall_s:.0f} s" if stalled
                            else f"killed after {timeout_s:.0f} s")
    return process.returncode, f"exit status {process.returncode}"


def trained_stamp(run_dir: Path) -> dict:
    """What trained the folder ({"commit", "cpu"}); {} where the folder does not say
    (a key is missing where the folder predates it)."""
    try:
        stamp = json.loads((Path(run_dir) / TRAINED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}


def train(config: StudyConfig, seed: int, run_dir: Path, common: list[str], timeout_s: float | None,
          threads: int = 1, stall_minutes: float = STALL_MINUTES, at_commit: str | None = None,
          commit: str | None = None) -> bool:
    """Train unless finished; True when the run folder holds a finished run.
    With `at_commit`, a finished folder counts only if that commit trained it;
    `commit` (default: asked of git) is stamped on a folder this call trains."""
    if status(run_dir) == "finished" and (at_commit is None or trained_stamp(run_dir).get("commit") == at_commit):
        return True
    if run_dir.exists():                      # failed, interrupted, or trained by other code: start clean
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    (run_dir / TRAINED).write_text(json.dumps({"commit": commit or git_commit(), "cpu": cpu_fingerprint()}) + "\n")
    command = train_command(config, seed, run_dir, common)
    (run_dir / "study_command.json").write_text(json.dumps(command[1:]) + "\n")
    log_path = run_dir / "study_train.out"
    env = dict(os.environ, PYTHONUNBUFFERED="1", TQDM_DISABLE="1", OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    started = time.perf_counter()
    code, reason = run_watched(command, log_path, env, timeout_s, stall_minutes * 60,
                               (run_dir,))
    if code == 0 and status(run_dir) == "finished":
        return True
    tail = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
    error = next((line for line in reversed(tail) if "error" in line.lower()), tail[-1] if tail else "")
    (run_dir / FAILED).write_text(f"{reason} after {time.perf_counter() - started:.0f} s: "
                                  f"{error.strip()[:300]}\n" + "\n".join(tail) + "\n", encoding="utf-8")
    return False
