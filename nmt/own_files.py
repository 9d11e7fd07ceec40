"""No command replaces a file it did not write: the one rule of every writer.

Every file nmt writes for a user (translations, heatmap pictures, attention
pages, beam trees, comparison tables, alignment files, averaged checkpoints)
carries a mark: the extended attribute `user.nmt.wrote`, holding the file's
purpose and the SHA-256 of its bytes, set on the temporary file before the
rename that puts it in place (nmt.atomic). An existing file at an output path
is replaced only when its mark names the same purpose and its bytes are still
the ones nmt wrote, or when the user says so (`--overwrite`). A user's file, a
file of another tool, a copy (`cp` drops the mark), a file edited since, or a
file nmt wrote for another purpose (a sweep's table over a checkpoint) is
refused in one line before anything is read or written.

Where the file system keeps no extended attributes, no mark can be set: the
next run over that file asks for --overwrite, a refusal and never a silent
loss. A path that is not a regular file (/dev/stdout, a FIFO) is written
into, not replaced, and is left to each command's own checks, as are folders
and missing parents (nmt.cli_checks.check_output). Standard library only:
commands ask this before their heavy imports.
"""

import hashlib
import os
import re
import stat
from pathlib import Path

from nmt.atomic import atomic_write
from nmt.errors import NmtError

XATTR = "user.nmt.wrote"
# The purposes, as each refusal names them
TRANSLATIONS, PAGE, BEAM_TREE, HEATMAP = "a translation file", "an attention page", "a beam tree", "a heatmap"
TABLE, ALIGNMENTS, AVERAGED = "a comparison table", "an alignment file", "an averaged checkpoint"
EXPLANATIONS = "an explanation file"            # nmt.translate --json
PICTURE = re.compile(r"\d{5,}(_[a-z-]+)?(_source_\d+-\d+)?\.png")   # --plot-attention's names (_METHOD: --explain)


def mark(purpose: str, data) -> tuple[str, bytes]:
    """The (attribute, value) pair that says nmt wrote `data` as `purpose`."""
    return XATTR, f"{purpose} sha256:{hashlib.sha256(data).hexdigest()}".encode("ascii")


def _digest(path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def wrote(path, purpose: str) -> bool:
    """Whether `path` is a regular file nmt wrote as `purpose` and nobody changed since."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        value = os.getxattr(path, XATTR).decode("ascii")
        name, _, digest = value.rpartition(" sha256:")
        return name == purpose and digest == _digest(path)
    except (OSError, UnicodeDecodeError, ValueError):
        return False


def check_replace(path, option: str, purpose: str, overwrite: bool = False, allow: str = "--overwrite") -> None:
    """NmtError when `path` is an existing regular file that nmt did not write
    as `purpose` (see the module's rule), unless `overwrite`. `option` names
    the path in the line; `allow` is the option that permits the replacement."""
    if overwrite:
        return
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):        # missing (a new file), or a name the caller refuses itself
        return
    if not stat.S_ISREG(mode) or wrote(path, purpose):
        return
    raise NmtError(f"{option} {path} exists and is not {purpose} that nmt wrote (nor unchanged since); "
                   f"replacing it would lose it; choose another file, or add {allow} to replace it")


def check_pictures(folder, option: str, overwrite: bool = False, allow: str = "--overwrite") -> None:
    """The heatmap names a picture folder may get (00001.png, 00001_source_1-13.png, 00001_saliency.png):
    each one there already must be a heatmap nmt drew, before any is drawn."""
    try:
        names = sorted(entry.name for entry in os.scandir(folder))
    except OSError:                      # missing (made later) or not a folder: the caller's to say
        return
    for name in names:
        if PICTURE.fullmatch(name):
            check_replace(Path(folder) / name, f"{option} {folder}: its", HEATMAP, overwrite, allow)


def write(path, data, purpose: str, durable: bool = False) -> None:
    """Write `data` to `path` whole (nmt.atomic.atomic_write) with nmt's mark
    for `purpose`. Raises OSError, worded by the caller."""
    atomic_write(path, data, durable, xattr=mark(purpose, data))
