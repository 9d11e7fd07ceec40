"""Why torch.load failed on a checkpoint, said from the file's own bytes.

"truncated or not a checkpoint ... use a copy or train again" makes a user
give up a file, so it is said only when the bytes show it: a zip archive
(torch's format) that fails its own checks (no central directory: cut
short; a record failing its CRC), or bytes that are not torch's format at
all (an empty file, text, a plain pickle). A whole, sound archive that
torch still cannot load is not called damaged: the line names what failed
(a file that cannot be read, torch's own error). `open_for_load` gives
torch.load a name it can take: torch encodes a path as UTF-8, so a name of
other bytes (a folder `nu\\xff\\xfe`) is read through an open file instead,
unmapped.
"""

import os
import pickle
import zipfile
from pathlib import Path

from nmt.base.errors import NmtError

ZIP_MAGIC = b"PK\x03\x04"


def utf8_name(path) -> bool:
    """Whether torch can take `path` as a name (its bytes are UTF-8)."""
    try:
        os.fsencode(os.fspath(path)).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:160]}" if text else type(error).__name__


def _sound_zip(path: Path) -> bool | None:
    """True for a zip archive whose every record passes its CRC, False for
    one that fails its checks (cut short, a damaged record), None when the
    file is not a zip at all."""
    with open(path, "rb") as file:
        magic = file.read(4)
    if magic != ZIP_MAGIC:
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.testzip() is None
    except (zipfile.BadZipFile, EOFError, ValueError, OSError):
        return False


def load_failure(path: Path, error: BaseException, advice: str) -> NmtError:
    """The one line for a torch.load that raised `error` on `path`; `advice`
    (the other checkpoints beside it) only where the bytes say it is damaged."""
    blocked = [line.strip() for line in str(error).splitlines() if "GLOBAL" in line]
    if isinstance(error, pickle.UnpicklingError) and blocked:
        return NmtError(f"checkpoint {path} was refused: it holds objects that could run code, not "
                        f"only tensors and plain data ({blocked[0][:120]}); "
                        "load only checkpoints written by nmt.train")
    try:
        sound = _sound_zip(path)         # reads every record: a file that cannot be read says so here
    except OSError as reading:
        return NmtError(f"cannot read checkpoint {path}: {reading.strerror or reading}; the file itself may be "
                        "whole: check its permissions and the disk, then run the command again")
    if sound:
        return NmtError(f"checkpoint {path}: torch cannot load it ({_first_line(error)}), though its bytes are "
                        "a whole zip archive whose every record passes its CRC-32 check: it is not damaged; "
                        "it may have been written by a newer torch, or not by nmt.train")
    return NmtError(f"checkpoint {path} is truncated or not a checkpoint ({type(error).__name__}); {advice}")
