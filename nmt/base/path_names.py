"""Paths in any form: a name longer than the file system holds, and bytes that
are not UTF-8.

- `check_name_length` refuses, in one line naming the option, a path with a
  name (one component) over the file system's NAME_MAX bytes (255 on ext4,
  xfs, tmpfs) or a whole path over PATH_MAX (4096): every os call on it
  would raise `OSError: [Errno 36] File name too long`, and where that
  happens is a traceback. The command lines check every option that names a
  file (`PATH_DESTS`, or one of `type=Path`) as they are parsed.
- `printable` shows a name of any bytes: Python keeps a name's bytes that
  are not UTF-8 as lone surrogates ('\\udcff'), which no UTF-8 stream can
  write (`UnicodeEncodeError`); they are printed escaped as '\\xff', the
  bytes of the name, and any other unwritable character as '\\uXXXX'.
"""

import errno
import os
from pathlib import Path

from nmt.base.errors import NmtError

NAME_MAX = 255      # where the file system does not say (os.pathconf)
PATH_MAX = 4096
# argparse dests that name a file or folder, in every command (a free-text option is not here)
PATH_DESTS = frozenset({
    "checkpoint", "checkpoints", "compare", "input", "output", "reference", "attention_html", "beam_tree",
    "links", "valid_links", "train_links", "confirm_links", "plot_attention", "csv", "sweep_dir", "run",
    "runs_dir", "out", "data_path", "cache_dir", "hf", "src", "tgt",
})


def printable(text: str) -> str:
    """`text` with every character a UTF-8 stream cannot write escaped: a
    name's non-UTF-8 bytes as \\xNN (the bytes), other lone surrogates as \\uXXXX."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:           # a surrogate that is not an escaped byte
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _limit(folder: Path, name: str, default: int) -> int:
    """The file system's limit (os.pathconf) at the nearest folder that exists."""
    while True:
        try:
            return os.pathconf(folder, name)
        except (OSError, ValueError):
            if folder.parent == folder:
                return default
            folder = folder.parent


def name_length_problem(path) -> str | None:
    """Why `path` cannot be a name on this file system (too long), else None."""
    text = os.fspath(path)
    raw = os.fsencode(text)
    if b"\0" in raw:
        return "holds a NUL byte, which no file name can hold"
    absolute = Path(os.path.abspath(text))
    longest = max((part for part in raw.split(b"/")), key=len, default=b"")
    limit = _limit(absolute.parent, "PC_NAME_MAX", NAME_MAX)
    if len(longest) > limit:
        shown = printable(os.fsdecode(longest[:40]))
        return (f"has a name of {len(longest)} bytes ({shown}...), over the {limit} bytes a name may have "
                "on this file system")
    total = len(os.fsencode(str(absolute)))
    path_limit = _limit(absolute.parent, "PC_PATH_MAX", PATH_MAX)
    if total >= path_limit:
        return f"is {total} bytes long, over the {path_limit} bytes a path may have on this file system"
    return None


def check_name_length(path, option: str) -> None:
    """NmtError `{option} {path} has a name of N bytes ...` for a path no file can have."""
    problem = name_length_problem(path)
    if problem is not None:
        shown = printable(os.fspath(path))
        shown = shown if len(shown) <= 80 else f"{shown[:60]}...{shown[-16:]}"
        named = f"{option}{shown}" if option.endswith("=") else f"{option} {shown}"
        raise NmtError(f"{named} {problem}; choose a shorter name")


def is_name_too_long(error: OSError) -> bool:
    """Whether an OSError is the file system's ENAMETOOLONG."""
    return error.errno == errno.ENAMETOOLONG
