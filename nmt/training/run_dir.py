"""One run per folder: a lock, and where `trainer.resume=auto` looks."""

import fcntl
import os
from pathlib import Path

from nmt.errors import NmtError


class RunDirLock:
    """An exclusive lock on the run folder for the lifetime of a run.

    A second run pointed at the same folder refuses at once instead of
    overwriting the first one's checkpoints.
    """

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / ".lock"
        self.handle = None

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.path, "w")
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.handle.close()
            raise NmtError(f"another run is using {self.path.parent}; wait for it or choose "
                           "another hydra.run.dir") from None
        self.handle.write(str(os.getpid()))
        self.handle.flush()
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()
        return False


def find_resume_checkpoint(resume, run_dir: Path) -> Path | None:
    """trainer.resume: null (fresh run), auto, or a checkpoint path.

    auto continues the run folder's own last.pt when it has one, otherwise the
    newest last.pt under the outputs root (the run folder's grandparent, e.g.
    outputs/ for outputs/DATE/TIME); with none anywhere it starts fresh.
    """
    if resume in (None, "", "null", False):
        return None
    if str(resume) != "auto":
        path = Path(str(resume))
        if not path.is_file():
            raise NmtError(f"trainer.resume={resume}: no such checkpoint file")
        return path
    own = Path(run_dir) / "checkpoints" / "last.pt"
    if own.is_file():
        return own
    root = Path(run_dir).parent.parent
    candidates = [p for p in root.glob("*/*/checkpoints/last.pt") if p.is_file()]
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None
