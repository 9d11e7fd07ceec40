"""No command replaces a file it did not write: the one rule of every writer.

Every file nmt writes for a user (translations, heatmap pictures, attention
pages, beam trees, comparison tables, alignment files, averaged checkpoints)
carries a mark: the extended attribute `user.nmt.wrote`, holding the file's
purpose and the SHA-256 of its bytes, set on the temporary file before the
rename that puts it in place (nmt.base.atomic). An existing file at an output path
is replaced only when its mark names the same purpose and its bytes are still
the ones nmt wrote, or when the user says so (`--overwrite`). A user's file, a
file of another tool, a copy (`cp` drops the mark), a file edited since, or a
file nmt wrote for another purpose (a sweep's table over a checkpoint) is
refused in one line before anything is read or written.

Where the file system keeps no extended attributes (some network and FAT
file systems, a container's overlay), the mark goes into a manifest beside
the file instead: `.nmt-wrote.json` in its folder, mapping each name to the
same purpose and digest. A file of that name that is not nmt's manifest is
never replaced; the file then goes unmarked, and the next run over it asks
for --overwrite: a refusal, never a silent loss.

A path that is not a regular file (/dev/stdout, a FIFO with its reader) is
written into, not replaced: the reader gets the bytes, the path stays as it
was, and it gets no mark (no manifest is written beside it). Such paths, folders
and missing parents are left to each command's own checks
(nmt.base.cli_checks.check_output). Standard library only: commands ask this
before their heavy imports.
"""

import errno
import hashlib
import json
import os
import re
import stat
from pathlib import Path

from nmt.base.atomic import atomic_write
from nmt.base.errors import NmtError
from nmt.base.file_inputs import path_kind

XATTR = "user.nmt.wrote"
MANIFEST = ".nmt-wrote.json"      # the marks of a folder whose file system keeps no extended attributes
MANIFEST_KIND = "the files nmt wrote here, with their purpose and sha256 (nmt.base.own_files)"
NO_XATTRS = (errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM, errno.EACCES, errno.E2BIG)
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
        value = _stored_mark(path)
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
    each one there already must be a heatmap nmt drew, before any is drawn. One that is not a
    regular file (a FIFO: drawing into it would wait forever; a device, a folder, a link loop)
    is refused even with `overwrite`: it is no picture to replace."""
    try:
        names = sorted(entry.name for entry in os.scandir(folder))
    except OSError:                      # missing (made later) or not a folder: the caller's to say
        return
    for name in names:
        if PICTURE.fullmatch(name):
            path = Path(folder) / name
            kind = path_kind(path) or ("a folder" if os.path.isdir(path) else None)
            if kind is not None:
                raise NmtError(f"{option} {folder}: its {name} is {kind}, not a picture file; move it away "
                               "or choose another folder")
            check_replace(path, f"{option} {folder}: its", HEATMAP, overwrite, allow)


def write(path, data, purpose: str, durable: bool = False) -> None:
    """Write `data` to `path` whole (nmt.base.atomic.atomic_write) with nmt's mark
    for `purpose`. Raises OSError, worded by the caller."""
    marked = mark(purpose, data)
    atomic_write(path, data, durable, xattr=marked)
    keep_mark(path, marked)


def _stored_mark(path) -> str:
    """The mark of `path`: its attribute, else its entry in the folder's manifest. OSError without one."""
    try:
        return os.getxattr(path, XATTR).decode("ascii")
    except OSError:
        target = Path(os.path.realpath(path))
        value = (_manifest(target.parent) or {}).get(target.name)
        if not isinstance(value, str):
            raise
        return value


def _manifest(folder: Path) -> dict | None:
    """The marks in `folder`'s manifest: {} when there is none; None when the file of
    that name is not nmt's manifest (another tool's, a folder, a FIFO: left alone)."""
    path = folder / MANIFEST
    if not os.path.lexists(path):
        return {}
    try:
        if not stat.S_ISREG(os.stat(path).st_mode) or os.path.getsize(path) > 1 << 24:
            return None
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or found.get("kind") != MANIFEST_KIND or not isinstance(found.get("files"), dict):
        return None
    return found["files"]


def keep_mark(path, marked: tuple[str, bytes]) -> None:
    """After `path` was written with the attribute `marked` (atomic_write): where the
    file system kept no attribute, the mark goes into the folder's manifest (the
    entries of files gone since are dropped). Where that file is not nmt's manifest,
    or cannot be written, the file stays unmarked (asked about next time). A path that is
    not a regular file (a FIFO, /dev/stdout) was written into, not replaced: it gets no
    mark and nothing is written beside it."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return
    except (OSError, ValueError):        # gone since (a reader removed it): nothing to mark
        return
    try:
        os.getxattr(path, marked[0])
        return                           # the attribute holds the mark
    except OSError as error:
        if error.errno not in (*NO_XATTRS, errno.ENODATA):
            return
    target = Path(os.path.realpath(path))
    files = _manifest(target.parent)
    if files is None:
        return
    files = {name: value for name, value in files.items()
             if name != target.name and os.path.isfile(target.parent / name)}
    files[target.name] = marked[1].decode("ascii")
    try:
        atomic_write(target.parent / MANIFEST,
                     json.dumps({"kind": MANIFEST_KIND, "files": files}, indent=1).encode("utf-8"))
    except OSError:
        pass                             # a full disk: unmarked, a question next time and never a loss
