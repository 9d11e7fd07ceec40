"""Where a script writes what it measured, made ready before it measures.

A benchmark may run for an hour before it writes its --out. `ready_file` and
`ready_folder` create the folder (nmt.base.folders.make_folder, as nmt's own
commands do) and check that it can be written to at the start, so a typo or a
read-only place is one line then (`SCRIPT: --out PATH: why`, exit status 1;
--out-json and the like too), never a traceback after the work is done.
"""

import os
import sys
from pathlib import Path

from nmt.base.errors import NmtError
from nmt.base.folders import make_folder


def ready_folder(path, script: str, option: str = "--out") -> Path:
    """The folder `path`, created with its parents and writable, or one line and exit."""
    try:
        return make_folder(path, option)
    except NmtError as error:
        sys.exit(f"{script}: {error}")


def ready_file(path, script: str, option: str = "--out") -> Path:
    """The file `path`, with its folder created and writable (an existing file is
    replaced at the end), or one line and exit."""
    file = Path(path)
    if file.is_dir():
        sys.exit(f"{script}: {option} {path}: a folder; give a file name")
    if file.exists() and not os.access(file, os.W_OK):
        sys.exit(f"{script}: {option} {path}: the file cannot be written to; choose another {option}")
    ready_folder(file.parent, script, option)
    return file
