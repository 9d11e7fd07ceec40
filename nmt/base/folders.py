"""A folder the user named, made before any work writes into it.

`make_folder` is the one place that creates such a folder (a run folder, the
cache, an output folder of a command or a script): it exists and can be
written to afterwards, or the reason is one NmtError line naming the setting
that gave it.
"""

import os
from pathlib import Path

from nmt.base.errors import NmtError
from nmt.base.file_inputs import special_kind


def make_folder(folder, name: str) -> Path:
    """Create `folder` with its parents and check that it can be written to.
    `name` is the config key (`cache_dir`: the line reads `cache_dir=FOLDER: ...`)
    or the option (`--out`: `--out FOLDER: ...`) that gave it."""
    label, path = f"{name} {folder}" if name.startswith("-") else f"{name}={folder}", Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file (or a FIFO, a device) where the folder should be
        kind = special_kind(path) or "a file"
        raise NmtError(f"{label}: {path} is {kind}, not a folder; choose another {name}") from None
    except OSError as error:  # a file above it, no permission, a read-only file system
        raise NmtError(
            f"{label}: cannot create the folder ({error.strerror or error}); choose another {name}"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise NmtError(f"{label}: the folder cannot be written to; choose another {name}")
    return path
