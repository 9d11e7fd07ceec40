"""Train one configuration and seed as its own `python -m nmt.train` process.

A failed run (non-zero exit, time-out) leaves `study_failed.txt` in its
folder with the exit status and the last lines of its output; the study
goes on. A folder with `summary.json` is finished and is not trained again,
so an interrupted study continues where it stopped; a run that was interrupted
(killed, or stopped by a signal) continues from its own checkpoints/last.pt when
the same commit, processor and command started it, and starts again otherwise.
`study_trained.json`
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

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from nmt import CHECKOUT, NmtError, check_run_members, git_commit, member_problem
from nmt_study.child_death import die_with_parent
from nmt_study.configs import StudyConfig
from nmt_study.machine import cpu_fingerprint

FAILED = "study_failed.txt"
TRAINED = "study_trained.json"    # {"commit": the code that trained the folder, "cpu": its processor}
# the folders of the checkout whose uncommitted changes a record's commit notes: nmt's, and the
# study's own, which measures every figure (nmt.git_commit)
CODE = ("nmt", "nmt_study", "configs")
# A run whose folder (its output, train.log, metrics.jsonl and TensorBoard's event files,
# which the trainer adds to every trainer.log_every updates and flushes at least every two
# minutes) has not grown for this long is taken as hung and stopped. Validation lines alone
# are too rare: on a core shared three ways 200 updates took 20 minutes.
STALL_MINUTES = 30.0


def record_path_of(out_dir: Path, name: str, seed: int) -> Path:
    return Path(out_dir) / "records" / name / f"seed{seed}.json"


def read_record(path: Path) -> dict | None:
    """The record at `path`; None where there is none (a run to train). Anything
    else that is not a whole record (a FIFO, a folder, a link loop, bytes that are
    not UTF-8 or not whole JSON, a finished record whose figures are not numbers)
    is one NmtError naming it (record_reading): reading the one would hang, and
    counting the others as not run would hide them."""
    from nmt_study.record_reading import load_record

    return load_record(path)


def write_record(path: Path, record: dict) -> None:
    from nmt import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8"))


def write_settings(folder: Path, settings: dict) -> None:
    """`folder`/study.json written whole or not at all: a full disk or an unwritable
    folder is one NmtError line, the previous study.json (or none) left as it was, and
    the folder removed again when this call made it and it is still empty."""
    from nmt import atomic_write

    folder, made = Path(folder), not os.path.lexists(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / "study.json", (json.dumps(settings, indent=1) + "\n").encode("utf-8"))
    except OSError as error:
        if made:
            try:
                folder.rmdir()
            except OSError:
                pass
        raise NmtError(f"cannot write {folder / 'study.json'}: {error.strerror or error}; free disk space "
                       "or choose another --out (the study's records stay as they were)") from None


def record_done(path: Path, commit: str | None = None) -> bool:
    """A finished record; with `commit`, one whose run that commit trained."""
    record = read_record(path)
    return bool(record) and record.get("status") == "finished" and commit in (None, record.get("commit"))


def run_dir_of(runs_dir: Path, name: str, seed: int) -> Path:
    return Path(runs_dir) / name / f"seed{seed}"


def check_study_members(run_dir: Path) -> None:
    """NmtError naming the first member of a study's run folder that is not what the
    study and nmt.train write there (a FIFO, a device, a link loop, a folder for a file):
    the run fails in one line, with nothing read, written or removed."""
    check_run_members(run_dir, "--runs-dir")
    for name in (FAILED, TRAINED, "study_command.json", "study_train.out"):
        problem = member_problem(run_dir / name, "file")
        if problem is not None:
            raise NmtError(f"{run_dir / name} {problem}; move it away or give the study another --runs-dir")


def train_command(config: StudyConfig, seed: int, run_dir: Path, common: list[str]) -> list[str]:
    """The trainer's command line. `-P`: the folder the study was started in is not
    on the trainer's import path (a checkout there would train with its own `nmt`);
    its nmt is the study's own, put first by `code_environment`."""
    return [sys.executable, "-P", "-m", "nmt.train", *common, *config.overrides, f"trainer.seed={seed}",
            f"hydra.run.dir={run_dir}"]


def code_environment(env: dict) -> dict:
    """`env` with the folder that holds this process's nmt package first on PYTHONPATH:
    the trainer runs the code whose commit (nmt.base.provenance.git_commit) the run is stamped with."""
    paths = [str(CHECKOUT), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


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
                stall_s: float, progress: tuple[Path, ...] = (), append: bool = False) -> tuple[int, str]:
    """Run `command` with its output in `log_path`; stop it when neither its output
    nor the files in or under `progress` (files or folders) have grown for
    `stall_s` seconds, or after `timeout_s` (None: no limit); `append` keeps what
    the log holds. -> (exit status, what happened)."""
    started = time.monotonic()
    watched = (log_path, *progress)
    with open(log_path, "a" if append else "w", encoding="utf-8") as log:
        # the child ends with the study, even one killed by SIGKILL (child_death)
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   preexec_fn=die_with_parent())
        CHILDREN.add(process)
        try:
            return watch(process, watched, timeout_s, stall_s, started)
        finally:
            CHILDREN.discard(process)


def watch(process: subprocess.Popen, watched: tuple[Path, ...], timeout_s: float | None, stall_s: float,
          started: float) -> tuple[int, str]:
    """Wait for `process`, killing it when `watched` stops growing or time runs out."""
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


def make_room(run_dir: Path) -> None:
    """Free `run_dir` for a fresh run without removing anything: a folder an
    earlier study made (it holds study_trained.json) is moved aside to
    NAME.previousK; anything else there (a user's own run or files) is
    refused with NmtError, untouched."""
    if not run_dir.exists() and not run_dir.is_symlink():
        return
    if not run_dir.is_dir() or run_dir.is_symlink() or not (run_dir / TRAINED).is_file():
        raise NmtError(f"{run_dir} exists and was not made by nmt_study; move it away or choose another "
                       "--runs-dir (the study removes nothing it did not make)")
    aside = next(run_dir.with_name(f"{run_dir.name}.previous{k}") for k in itertools.count(1)
                 if not run_dir.with_name(f"{run_dir.name}.previous{k}").exists())
    run_dir.rename(aside)


class Children:
    """The `nmt.train` processes this study runs now: stopped with the study."""

    GRACE_S = 30.0      # a child stopped by SIGTERM ends its update and writes last.pt; then it is killed

    def __init__(self):
        self.lock = threading.Lock()
        self.live: set[subprocess.Popen] = set()

    def add(self, process: subprocess.Popen) -> None:
        with self.lock:
            self.live.add(process)

    def discard(self, process: subprocess.Popen) -> None:
        with self.lock:
            self.live.discard(process)

    def stop(self) -> None:
        """SIGTERM to every live child, then SIGKILL to any still running after GRACE_S."""
        with self.lock:
            live = list(self.live)
        for process in live:
            process.terminate()
        deadline = time.monotonic() + self.GRACE_S
        for process in live:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


CHILDREN = Children()


def trained_stamp(run_dir: Path) -> dict:
    """What trained the folder ({"commit", "cpu"}); {} where the folder does not say
    (a key is missing where the folder predates it)."""
    try:
        stamp = json.loads((Path(run_dir) / TRAINED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}


def can_continue(run_dir: Path, command: list[str], commit: str) -> int | None:
    """The update to continue from, for an interrupted folder this study started with
    the same command, at `commit`, on this processor, whose checkpoints/last.pt loads
    (the trainer's exact resume); None where the run starts again, as after a failure
    the run itself reported (a non-zero exit of its own)."""
    if status(run_dir) == "finished" or not was_interrupted(run_dir):
        return None
    stamp = trained_stamp(run_dir)
    if stamp.get("commit") != commit or stamp.get("cpu") != cpu_fingerprint():
        return None
    try:
        started_with = json.loads((run_dir / "study_command.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return last_step(run_dir) if started_with == command[1:] else None


# How a run stopped from outside ends: killed by a signal (a negative status), the
# trainer's own exit after SIGINT or SIGTERM (130, 143, last.pt written), stopped by
# the study's watch, or no failure written at all (the study itself was killed).
INTERRUPTIONS = ("exit status -", "exit status 130", "exit status 143", "killed after", "stopped: no output")


def was_interrupted(run_dir: Path) -> bool:
    if not (run_dir / FAILED).exists():
        return True
    return failure_reason(run_dir).startswith(INTERRUPTIONS)


def last_step(run_dir: Path) -> int | None:
    """The update checkpoints/last.pt was written at; None where it is missing or does not load."""
    from nmt import load_checkpoint

    try:
        step = load_checkpoint(run_dir / "checkpoints" / "last.pt", mmap=True).get("progress", {}).get("step")
    except NmtError:
        return None
    return step if isinstance(step, int) else None


def continue_from_last(run_dir: Path, command: list[str], step: int) -> list[str]:
    """Ready `run_dir` to continue: its failure note joins study_interruptions.txt,
    the stamp lists the step it continues from, and the command gains
    trainer.resume=auto (its own checkpoints/last.pt)."""
    failed = run_dir / FAILED
    note = failure_reason(run_dir) if failed.exists() else "the study was stopped"
    with open(run_dir / "study_interruptions.txt", "a", encoding="utf-8") as log:
        log.write(f"{note}; continued from checkpoints/last.pt at update {step}\n")
    failed.unlink(missing_ok=True)
    stamp = trained_stamp(run_dir)
    stamp["continued_from_updates"] = [*stamp.get("continued_from_updates", []), step]
    (run_dir / TRAINED).write_text(json.dumps(stamp) + "\n")
    return [*command, "trainer.resume=auto"]


def train(config: StudyConfig, seed: int, run_dir: Path, common: list[str], timeout_s: float | None,
          threads: int = 1, stall_minutes: float = STALL_MINUTES, at_commit: str | None = None,
          commit: str | None = None) -> bool:
    """Train unless finished; True when the run folder holds a finished run.
    With `at_commit`, a finished folder counts only if that commit trained it;
    `commit` (default: asked of git) is stamped on a folder this call trains."""
    check_study_members(run_dir)              # a FIFO as study_command.json would hang the study: one line
    if status(run_dir) == "finished" and (at_commit is None or trained_stamp(run_dir).get("commit") == at_commit):
        return True
    commit = commit or git_commit(CODE)
    command = train_command(config, seed, run_dir, common)
    step = can_continue(run_dir, command, commit)
    continuing = step is not None
    if continuing:
        command = continue_from_last(run_dir, command, step)
    else:
        make_room(run_dir)                    # failed, or trained by other code or another command: start clean
        run_dir.mkdir(parents=True)
        (run_dir / TRAINED).write_text(json.dumps({"commit": commit, "cpu": cpu_fingerprint()}) + "\n")
        (run_dir / "study_command.json").write_text(json.dumps(command[1:]) + "\n")
    log_path = run_dir / "study_train.out"
    env = code_environment(dict(os.environ, PYTHONUNBUFFERED="1", TQDM_DISABLE="1", OMP_NUM_THREADS=str(threads),
                                MKL_NUM_THREADS=str(threads)))
    started = time.perf_counter()
    code, reason = run_watched(command, log_path, env, timeout_s, stall_minutes * 60,
                               (run_dir,), append=continuing)
    if code == 0 and status(run_dir) == "finished":
        return True
    tail = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
    error = next((line for line in reversed(tail) if "error" in line.lower()), tail[-1] if tail else "")
    (run_dir / FAILED).write_text(f"{reason} after {time.perf_counter() - started:.0f} s: "
                                  f"{error.strip()[:300]}\n" + "\n".join(tail) + "\n", encoding="utf-8")
    return False
