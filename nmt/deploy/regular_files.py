"""One member of an exported folder, read only when it is a regular file
(nmt.deploy.members has the whole list of checks)."""

import errno
import os
import stat
from pathlib import Path

from nmt.base.errors import NmtError
from nmt.base.file_inputs import KINDS

SMALL = 256 << 20   # bytes: any member but model.bin
AGAIN = "export the checkpoint again (python -m nmt.export --checkpoint best.pt --output DIR)"


def refuse(path, problem: str) -> NmtError:
    return NmtError(f"exported model file {path} {problem}; {AGAIN}")


def _kind(mode: int) -> str:
    return next((name for test, name in KINDS if test(mode)), "not a regular file")


def read_member(path: Path, limit: int = SMALL) -> bytes:
    """The bytes of one member; NmtError for anything but a regular file of at most `limit` bytes."""
    try:
        mode = os.stat(path).st_mode                 # follows links, never blocks
        if not stat.S_ISREG(mode):
            raise refuse(path, "is a folder" if stat.S_ISDIR(mode) else f"is {_kind(mode)}, not a regular file")
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)     # a FIFO swapped in since: no wait
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise refuse(path, "is a symbolic link loop (it leads back to itself)") from None
        raise refuse(path, f"cannot be read ({error.strerror or error})") from None
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise refuse(path, f"is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise refuse(path, f"is {info.st_size} bytes, over the {limit} bytes nmt reads for it")
        data = file.read(min(info.st_size, limit) + 1)   # a file that grew since: caught below
    if len(data) > limit:
        raise refuse(path, f"is over the {limit} bytes nmt reads for it")
    return data
