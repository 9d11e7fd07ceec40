"""What keeps a training study from harming other work (issue 46).

    with StudyLock({"--runs-dir": runs_dir, "--out": out}), stop_children_on_signals():
        ...train...

A lock on each folder (flock on the folder itself, so no file is left in
it): a second study pointed at the same run folders or records refuses at
once instead of moving the first one's runs aside under it. A stop signal
(SIGINT, SIGTERM) first stops the `nmt.train` children (each ends its update
and writes last.pt; nmt_study.runner.Children), then ends the study as every
command does (nmt.base.signals: one line, exit 128 + N).
"""

import fcntl
import os
import signal
from contextlib import contextmanager
from pathlib import Path

from nmt import NmtError
from nmt_study.runner import CHILDREN


class StudyLock:
    """Exclusive locks on folders ({option: folder}) for one training session; each is created if missing."""

    def __init__(self, folders: dict[str, Path]):
        self.folders = folders
        self.handles: list[int] = []

    def __enter__(self):
        try:
            for option, folder in self.folders.items():
                self.handles.append(lock_folder(option, Path(folder)))
        except BaseException:
            self.release()
            raise
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def release(self) -> None:
        while self.handles:
            os.close(self.handles.pop())      # closing the descriptor drops its lock


def lock_folder(option: str, folder: Path) -> int:
    """A descriptor holding an exclusive lock on `folder`, or NmtError when another study holds it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as error:
        raise NmtError(f"{option} {folder}: {error.strerror or error}; give a folder") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(handle)
        raise NmtError(f"{option} {folder}: another nmt_study is training into it; wait for it to end or "
                       "choose another folder") from None
    return handle


@contextmanager
def stop_children_on_signals():
    """Within: SIGINT and SIGTERM stop the live training children, then the handler that was
    in place runs (the command's: one line, exit 128 + N); after: that handler again."""
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}

    def handler(number, frame):
        CHILDREN.stop()
        before = previous[number]
        if callable(before):
            before(number, frame)
        else:                               # the system's default (or ignore): as if we had not been here
            signal.signal(number, before)
            os.kill(os.getpid(), number)

    for signum in previous:
        signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)
