"""Which code produced a record: the commit every benchmark and study record names.

A copy of a checkout without its git history (the tree sent to a GPU machine)
names its commit in the environment, NMT_COMMIT=HASH; git's answer, where
there is one, always wins.

Git is asked about the checkout the running nmt code comes from, never about
the folder a command was started in: in CHECKOUT, with the variables that point
git at another repository (GIT_DIR, GIT_WORK_TREE, ...) left out
(`git_environment`), and only when CHECKOUT is that repository's top level (a
copy of nmt inside another repository, or under a virtual environment in one,
is not that repository's code)."""

import os
import re
import subprocess
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]   # the folder holding nmt/ (a git checkout, or site-packages)
STATED = "NMT_COMMIT"
# what would make git answer about another repository than the one in its working folder
GIT_LOCATORS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE")


def git_environment() -> dict:
    """This process's environment without GIT_LOCATORS: git then finds its
    repository from the folder it is run in (`cwd`, or `git -C`), and only there."""
    return {key: value for key, value in os.environ.items() if key not in GIT_LOCATORS}


def git_commit(folders: tuple[str, ...] = ("nmt", "configs")) -> str:
    """The checkout's HEAD as 12 hex digits, with a note when tracked files
    under `folders` of the checkout (default nmt/ and configs/; the study adds
    its own, nmt_study/) differ from it; where git cannot tell, the commit
    that NMT_COMMIT states (its first 12 hex digits, with a note), else "unknown"."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], cwd=CHECKOUT, capture_output=True, text=True,
                                  env=git_environment())
        except OSError:          # no git on this machine
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    top = git("rev-parse", "--show-toplevel")
    own = bool(top) and Path(top).resolve() == Path(CHECKOUT).resolve()
    commit = git("rev-parse", "--short=12", "HEAD") if own else ""
    if not commit:
        stated = os.environ.get(STATED, "").strip().lower()
        if re.fullmatch(r"[0-9a-f]{7,40}", stated):
            return f"{stated[:12]} (stated by {STATED}: a copy without git history)"
        return "unknown"
    dirty = commit != "unknown" and git("status", "--porcelain", "--untracked-files=no", "--", *folders)
    named = [f"{folder}/" for folder in folders]
    where = " or ".join([", ".join(named[:-1]), named[-1]] if len(named) > 1 else named)
    return commit + (f" (with uncommitted changes under {where})" if dirty else "")
