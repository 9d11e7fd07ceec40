"""Replace a file all at once: readers see the old file or the new one, never a part."""

import errno
import os
import tempfile
from pathlib import Path

from nmt.base import signals


def atomic_write(path, data: bytes, durable: bool = False, xattr: tuple[str, bytes] | None = None) -> None:
    """Write `data` to `path` through a temporary file beside it and a rename.

    The file keeps its permissions, or gets the umask's for a new one (the
    temporary file is private). A symlink keeps pointing at the new file; a
    path that is a device or a pipe (/dev/stdout) is written into directly. `durable`
    also syncs the bytes to disk before the rename. `xattr` (name, value): an extended
    attribute set on the new file before the rename (nmt.base.own_files' mark), left out
    where the file system keeps none. Raises OSError, worded by the caller; a failed write leaves
    the old file as it was and no temporary file behind.
    """
    if os.path.exists(path) and not os.path.isfile(path):
        # A device or pipe (/dev/stdout, a FIFO): nothing to replace, so write into it.
        fd = os.open(path, os.O_WRONLY)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        return
    target = Path(os.path.realpath(path))  # through a symlink: replace the file, not the link
    if target.exists():
        mode = target.stat().st_mode & 0o777
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp_name = tmp
    signals.temporary_files.add(tmp)       # from here a stop signal removes it (nmt.base.signals)
    try:
        try:
            write_all(fd, data)
            if xattr is not None:
                _set_xattr(fd, *xattr)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        signals.temporary_files.discard(tmp_name)


def _set_xattr(fd: int, name: str, value: bytes) -> None:
    try:
        os.setxattr(fd, name, value)
    except OSError as error:             # no extended attributes here: the file goes unmarked
        if error.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM, errno.EACCES, errno.E2BIG):
            raise


def write_all(fd: int, data) -> None:
    """Write every byte of `data` to file descriptor `fd` or raise OSError.

    Not through Python's buffered files: when write(2) writes only part
    (a file-size limit, `ulimit -f`), sys.stdout's buffered writer was seen to
    report success and drop the rest (`sys.stdout.buffer.write(b"x" * 200)`
    and a flush, under a 64-byte limit, exit 0 with 64 bytes written), so a
    cut-off output would look whole. Every return of write(2) is checked here."""
    view = memoryview(data).cast("B")
    while view:
        written = os.write(fd, view)
        if written <= 0:                # write(2) never returns 0 for a regular file with room
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def atomic_link(written, path, data: bytes, durable: bool = False) -> None:
    """Make `path` another name of the file `written` (whose bytes are `data`) at once:
    a hard link beside `path`, renamed onto it, so readers see the old file or the new one.

    The two names share the bytes until either is replaced (nmt only ever replaces a file by
    a rename, which leaves the other name as it was). Where the file system has no hard
    links (or `written` is on another one), `data` is written to `path` as atomic_write
    writes it. A symlink at `path` keeps pointing at the new file. Raises OSError."""
    target = Path(os.path.realpath(path))
    source = os.path.realpath(written)
    if str(target) == source:
        return
    tmp = os.path.join(target.parent, f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.link")
    signals.temporary_files.add(tmp)
    try:
        try:
            os.link(source, tmp)
        except OSError as error:
            if error.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP):
                raise
            atomic_write(target, data, durable)
            return
        os.replace(tmp, target)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        signals.temporary_files.discard(tmp)
