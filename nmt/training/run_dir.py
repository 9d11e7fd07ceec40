"""One run per folder: a lock, and where `trainer.resume=auto` looks."""

import fcntl
import os
from pathlib import Path

from nmt.errors import NmtError


_held: dict[Path, int] = {}     # lock file -> how many RunDirLocks of this process hold it


class RunDirLock:
    """An exclusive lock on the run folder for the lifetime of a run.

    A second run pointed at the same folder refuses at once instead of
    overwriting the first one's checkpoints. Re-entrant within a process:
    `nmt.train` takes it before reading any data and `Trainer.fit` again.
    """

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / ".lock"
        self.handle = None

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        key = self.path.resolve()
        if _held.get(key):
            _held[key] += 1
            return self
        handle = open(self.path, "a+")     # not "w": the holder's pid stays readable
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise NmtError(f"another run is using {self.path.parent}; wait for it or choose "
                           "another hydra.run.dir") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self.handle, _held[key] = handle, 1
        return self

    def __exit__(self, *exc):
        key = self.path.resolve()
        _held[key] -= 1
        if _held[key] == 0:
            del _held[key]
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
