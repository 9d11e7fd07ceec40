"""Every member of a run folder that nmt reads or writes is what nmt writes there:
a regular file (train.log, metrics.jsonl, summary.json, .lock, .hydra/*.yaml,
checkpoints/*.pt) or a folder (checkpoints/, .hydra/, tensorboard/).

A FIFO in place of one would make a read or a write wait forever (opening a
FIFO blocks until the other end opens), a device would never end, a folder or a
symbolic link loop is a traceback where a file is opened, and a file where a
folder belongs fails halfway through a run. `check_run_members` names the first
such member in one line before anything is read or written; it only stats
(lstat and stat never block). Missing members are fine: a run writes them.
Standard library only.
"""

import os
from pathlib import Path

from nmt.base.errors import NmtError
from nmt.base.file_inputs import path_kind
from nmt.base.run_files import CHECKPOINTS, OWN_FILES, OWN_FOLDERS

HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")


def _members(run_dir: Path):
    """(path, "file" | "folder") of every member nmt reads or writes that exists."""
    for name in OWN_FILES:
        yield run_dir / name, "file"
    for name in OWN_FOLDERS:
        yield run_dir / name, "folder"
    for name in HYDRA_FILES:
        yield run_dir / ".hydra" / name, "file"
    try:
        names = sorted(entry.name for entry in os.scandir(run_dir / CHECKPOINTS))
    except OSError:                      # missing, or not a folder (said above)
        names = []
    for name in names:
        if name.endswith(".pt"):
            yield run_dir / CHECKPOINTS / name, "file"


def member_problem(path: Path, want: str) -> str | None:
    """What is wrong with `path`, which should be a `want` ("file" or "folder"), else None."""
    if not os.path.lexists(path):
        return None
    kind = path_kind(path)
    if kind is None and want == "file" and os.path.isdir(path):
        kind = "a folder"
    if kind is None and want == "folder" and not os.path.isdir(path):
        kind = "a file"
    return None if kind is None else f"is {kind}, not the {'regular file' if want == 'file' else 'folder'} nmt writes"


def check_run_members(run_dir, option: str = "hydra.run.dir") -> None:
    """NmtError naming the first member of `run_dir` that is not what nmt writes there
    (see the module), with what it is: `{option}={run_dir}: its metrics.jsonl is a
    FIFO (named pipe), not the regular file nmt writes; move it away or choose another
    {option}`."""
    run_dir = Path(run_dir)
    if not os.path.isdir(run_dir):
        return                           # a new folder, or the caller's own refusal
    for path, want in _members(run_dir):
        problem = member_problem(path, want)
        if problem is not None:
            raise NmtError(f"{option}={run_dir}: its {path.relative_to(run_dir)} {problem}; move it away or "
                           f"choose another {option}")
