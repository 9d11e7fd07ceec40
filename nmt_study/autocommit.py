"""`python -m nmt_study --git-commit`: each finished run's record committed as it lands.

A Multi30k study outlives a sitting. Its report is rebuilt from the records
alone (OUT/records/NAME/seedN.json, with OUT/study.json), so committing
those files the moment a run finishes is what lets a study stopped by a
closed laptop or a lost machine continue elsewhere without training that run
again. Each commit holds that run's record and the study's settings, nothing
else: whatever else the user has staged stays staged, uncommitted.
"""

import subprocess
import time
from pathlib import Path

from nmt import NmtError, git_environment

LOCK_RETRIES = 20          # another study process (or the user) may hold .git/index.lock for a moment


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              env=git_environment())
    except OSError as error:      # no git on this machine: a failed command, not a traceback
        return subprocess.CompletedProcess(args, 127, "", f"git: {error.strerror or error}")


def work_tree_of(out: Path) -> Path:
    """The git work tree that holds OUT, or one clear error before any training."""
    Path(out).mkdir(parents=True, exist_ok=True)
    found = _git(Path(out), "rev-parse", "--show-toplevel")
    if found.returncode != 0:
        reason = (found.stderr.strip() or "git failed").splitlines()[0]
        raise NmtError(f"--git-commit: {out} is not inside a git work tree ({reason}); leave --git-commit out, "
                       "or put --out in the repository")
    return Path(found.stdout.strip())


def commit_record(out: Path, record_path: Path, message: str) -> str:
    """Commit `record_path` and OUT/study.json alone -> what happened, for the
    study's log: "committed <hash>" or "not committed: <git's reason>". A
    failed commit never stops the study: the record is on disk either way."""
    try:
        repo = work_tree_of(out)      # checked before training; the repository can go away since
    except NmtError as error:
        return f"not committed: {error}"
    paths = [str(Path(p).resolve().relative_to(repo.resolve()))
             for p in (record_path, Path(out) / "study.json") if Path(p).exists()]
    for _ in range(LOCK_RETRIES):
        done = _git(repo, "add", "--", *paths)
        if done.returncode == 0:
            done = _git(repo, "commit", "--quiet", "--no-verify", "-m", message, "--only", "--", *paths)
        if done.returncode == 0:
            return "committed " + _git(repo, "rev-parse", "--short", "HEAD").stdout.strip()
        if "index.lock" not in done.stderr:
            break
        time.sleep(0.5)
    reason = (done.stderr.strip() or done.stdout.strip() or "git failed").splitlines()[0]
    return f"not committed: {reason}"
