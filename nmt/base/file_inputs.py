"""A file input is a regular file: a FIFO, a device or a socket where a file is
expected would make a read wait forever (a FIFO with no writer, /dev/tty) or
never end (/dev/zero), so every command refuses one before it opens it.

`os.stat` follows symlinks, so a link to a FIFO is a FIFO here, and it never
blocks: the check itself cannot hang. Missing paths and folders are left to
the caller, which knows what to suggest for them. Standard input stays the
way to pipe text in (`nmt.translate` without `--input`, or `--input -`).
"""

import errno
import os
import stat
from pathlib import Path

from nmt.base.errors import NmtError

KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def special_kind(path) -> str | None:
    """What `path` is when it exists and is neither a regular file nor a
    folder ("a FIFO (named pipe)", "a character device", ...), else None."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):        # missing, a dangling link, a NUL byte: the caller's to say
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((name for test, name in KINDS if test(mode)), "not a regular file")


def refuse_special(path, what: str, advice: str = "give a regular file") -> Path:
    """`path` as a Path, or NmtError when it is a FIFO, a device or a socket:
    `{what} {path} is a FIFO (named pipe), not a regular file; {advice}`."""
    kind = special_kind(path)
    if kind is not None:
        name = f"{what}{path}" if what.endswith("=") else f"{what} {path}" if what else str(path)
        raise NmtError(f"{name} is {kind}, not a regular file; {advice}")
    return Path(path)


def path_kind(path) -> str | None:
    """What `path` is when it is not a plain folder or regular file: "a symbolic link
    loop", "a dangling symbolic link", or special_kind's words; None for a folder,
    a regular file (through links) or a missing path. os.stat and lstat never block."""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a symbolic link loop (it leads back to itself)"
        if os.path.islink(path):
            return "a dangling symbolic link"
        return None
    except ValueError:                   # a NUL byte: the caller's to say
        return None
    return special_kind(path)


def refuse_not_folder(path, what: str, advice: str) -> Path:
    """`path` as a Path when it is a folder; else one NmtError line saying what it is
    (missing, a file, a FIFO, a device, a link loop): `{what} {path} is a FIFO
    (named pipe), not a folder; {advice}`."""
    kind = path_kind(path)
    if kind is None and not os.path.isdir(path):
        kind = "a file" if os.path.exists(path) else "missing"
    if kind is not None:
        name = f"{what} {path}" if what else str(path)
        raise NmtError(f"{name} is {kind}, not a folder; {advice}" if kind != "missing" else
                       f"{name} does not exist; {advice}")
    return Path(path)


def refuse_not_file(path, what: str, advice: str) -> Path:
    """`path` as a Path when it is a regular file or missing (the caller says what a
    missing one means); else one NmtError line: a folder, a FIFO, a device, a link loop."""
    kind = path_kind(path) or ("a folder" if os.path.isdir(path) else None)
    if kind is not None:
        name = f"{what} {path}" if what else str(path)
        raise NmtError(f"{name} is {kind}, not a regular file; {advice}")
    return Path(path)
