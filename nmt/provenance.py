"""Which code produced a record: the commit every benchmark and study record names."""

import subprocess
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]   # the folder holding nmt/ (a git checkout, or site-packages)


def git_commit() -> str:
    """The checkout's HEAD as 12 hex digits, with a note when tracked files
    under nmt/ or configs/ differ from it; "unknown" outside a git checkout
    or without git."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], cwd=CHECKOUT, capture_output=True, text=True)
        except OSError:          # no git on this machine
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = commit != "unknown" and git("status", "--porcelain", "--untracked-files=no", "--", "nmt", "configs")
    return commit + (" (with uncommitted changes under nmt/ or configs/)" if dirty else "")
