"""Where a script writes what it measured, made ready before it measures.

A benchmark may run for an hour before it writes its --out. `ready_file` and
`ready_folder` create the folder and check that it can be written to at the
start, so a typo or a read-only place is one line then (`SCRIPT: --out PATH:
why`, exit status 1; --out-json and the like too), never a traceback after the work is done.
"""

import os
import sys
from pathlib import Path


def refuse(script: str, option: str, path, reason: str):
    sys.exit(f"{script}: {option} {path}: {reason}")


def ready_folder(path, script: str, option: str = "--out", option_value=None) -> Path:
    """The folder `path`, created with its parents and writable, or one line and exit.
    `option_value`: what the user gave `option`, named in the line (default `path`)."""
    folder, named = Path(path), path if option_value is None else option_value
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # the folder, or a folder above it, is a file
        refuse(script, option, named, f"{folder} is a file, not a folder")
    except OSError as error:
        refuse(script, option, named, f"cannot create the folder {folder} ({error.strerror or error})")
    if not os.access(folder, os.W_OK | os.X_OK):
        refuse(script, option, named, f"the folder {folder} cannot be written to")
    return folder


def ready_file(path, script: str, option: str = "--out") -> Path:
    """The file `path`, with its folder created and writable (an existing file is
    replaced at the end), or one line and exit."""
    file = Path(path)
    if file.is_dir():
        refuse(script, option, path, "is a folder; give a file name")
    if file.exists() and not os.access(file, os.W_OK):
        refuse(script, option, path, "the file cannot be written to")
    ready_folder(file.parent, script, option, option_value=path)
    return file
