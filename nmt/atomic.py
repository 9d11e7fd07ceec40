"""Replace a file all at once: readers see the old file or the new one, never a part."""

import os
import tempfile
from pathlib import Path

from nmt import signals


def atomic_write(path, data: bytes, durable: bool = False) -> None:
    """Write `data` to `path` through a temporary file beside it and a rename.

    The file keeps its permissions, or gets the umask's for a new one (the
    temporary file is private). `durable` also syncs the bytes to disk before
    the rename. Raises OSError, worded by the caller; a failed write leaves
    the old file as it was and no temporary file behind.
    """
    target = Path(path)
    if target.exists():
        mode = target.stat().st_mode & 0o777
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp_name = tmp
    signals.temporary_files.add(tmp)       # a stop signal now removes it (nmt.signals)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        signals.temporary_files.discard(tmp_name)
