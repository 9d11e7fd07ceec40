"""Which code produced a record: the commit every benchmark and study record names.

A copy of a checkout without its git history (the tree sent to a GPU machine)
names its commit in the environment, NMT_COMMIT=HASH; git's answer, where
there is one, always wins."""

import os
import re
import subprocess
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]   # the folder holding nmt/ (a git checkout, or site-packages)
STATED = "NMT_COMMIT"


def git_commit() -> str:
    """The checkout's HEAD as 12 hex digits, with a note when tracked files
    under nmt/ or configs/ differ from it; where git cannot tell, the commit
    that NMT_COMMIT states (its first 12 hex digits, with a note), else "unknown"."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], cwd=CHECKOUT, capture_output=True, text=True)
        except OSError:          # no git on this machine
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short=12", "HEAD")
    if not commit:
        stated = os.environ.get(STATED, "").strip().lower()
        if re.fullmatch(r"[0-9a-f]{7,40}", stated):
            return f"{stated[:12]} (stated by {STATED}: a copy without git history)"
        return "unknown"
    dirty = commit != "unknown" and git("status", "--porcelain", "--untracked-files=no", "--", "nmt", "configs")
    return commit + (" (with uncommitted changes under nmt/ or configs/)" if dirty else "")
