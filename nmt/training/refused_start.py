"""A refused run writes nothing anywhere: the folders nmt.train made for it
are removed again, and a refused sweep leaves the sweep folder's record as
it was.

Hydra makes the run folder (`hydra.run.dir`, outputs/DATE/TIME) and a
sweep's folder before nmt.train can check the config, and writes the
sweep's `multirun.yaml` before its first job starts. So RunDirCheck (a
Hydra callback, nmt.training.run_dir) notes here which folders do not exist
yet before it makes them, and moves an existing `multirun.yaml` aside
(`.multirun.yaml.kept`, a rename: the old record's bytes are never copied
or rewritten). When the command ends (`finish`):

- a sweep none of whose jobs took its folder (every job refused, whatever
  its launcher or process) puts the old record back in place, or removes
  the record Hydra wrote where there was none; a sweep that ran keeps the
  new record and the old one beside it as `multirun.previous.yaml`
  (`multirun.previous.N.yaml` when that name is taken);
- every folder noted as made is removed when it is empty (`rmdir`: a folder
  holding anything, a run's or a user's, stays), deepest first.

A job "took its folder" when it wrote the `.hydra/` record, which
nmt.train does only once RunDirLock holds the folder, after this command
started. Standard library only.
"""

import os
import time
from pathlib import Path

RECORD, KEPT = "multirun.yaml", ".multirun.yaml.kept"
_made: list[Path] = []                  # folders this command made, parents after their children
_sweep: dict = {}                       # dir, kept (the old record moved aside) and started (ns)


def note_missing(folder) -> None:
    """Before `folder` is made: note it and each missing parent as made by this command."""
    missing = [p for p in (Path(folder), *Path(folder).parents) if not os.path.lexists(p)]
    _made.extend(p for p in missing if p not in _made)


def keep_sweep_record(sweep_dir) -> None:
    """Before Hydra writes the sweep's record: move an existing one aside."""
    record = Path(sweep_dir) / RECORD
    kept = None
    if record.is_file() and not record.is_symlink():
        kept = record.with_name(KEPT)
        os.replace(record, kept)
    _sweep.update(dir=Path(sweep_dir), kept=kept, started=time.time_ns())


def _a_job_ran(sweep_dir: Path, since: int) -> bool:
    for hydra_record in sweep_dir.glob("**/.hydra/hydra.yaml"):
        try:
            if hydra_record.stat().st_mtime_ns >= since:
                return True
        except OSError:
            continue
    return False


def _free_name(folder: Path) -> Path:
    path, number = folder / "multirun.previous.yaml", 2
    while os.path.lexists(path):
        path, number = folder / f"multirun.previous.{number}.yaml", number + 1
    return path


def _settle_sweep() -> None:
    folder, kept, started = _sweep["dir"], _sweep["kept"], _sweep["started"]
    record = folder / RECORD
    if _a_job_ran(folder, started):
        if kept is not None:
            os.replace(kept, _free_name(folder))
    elif kept is not None:
        os.replace(kept, record)        # the old record, its bytes and times as they were
    elif record.is_file():
        try:
            written = record.stat().st_mtime_ns >= started
        except OSError:
            written = False
        if written:
            record.unlink()
            if folder in _made:          # its job folders, empty, were made by this sweep too
                for job in sorted(folder.glob("**/*"), key=lambda p: -len(p.parts)):
                    _remove_if_empty(job)


def _remove_if_empty(folder: Path) -> None:
    try:
        if folder.is_dir() and not folder.is_symlink():
            folder.rmdir()
    except OSError:                      # not empty, or not ours to remove
        pass


def finish() -> None:
    """At the command's end: settle a sweep's record, remove the empty folders it made."""
    try:
        if _sweep:
            _settle_sweep()
        for folder in sorted(_made, key=lambda p: -len(p.parts)):
            _remove_if_empty(folder)
    finally:
        _made.clear()
        _sweep.clear()
