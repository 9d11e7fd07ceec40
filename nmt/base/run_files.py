"""Which folders hold a run, and which files are a run's own.

A folder holds a run when it has any trace of one: a checkpoint
(`checkpoints/*.pt`), a `metrics.jsonl` with a record, or a `summary.json`.
`checkpoints/last.pt` alone is not the test: users delete it to save space
(it carries the optimiser state), and a run may end without one, yet its
`best.pt`, `step_N.pt` and metrics are still its results. A new run never
writes into such a folder, and no command writes over a run's own files
unless the user says so. Only the standard library: commands ask this before
their heavy imports.
"""

from pathlib import Path

from nmt.base.errors import NmtError

CHECKPOINTS = "checkpoints"
RECORDS = ("metrics.jsonl", "summary.json")
OWN_FILES = RECORDS + ("train.log", ".lock")            # beside checkpoints/ in a run folder
OWN_FOLDERS = (CHECKPOINTS, ".hydra", "tensorboard")


def run_traces(run_dir) -> list[Path]:
    """The files in `run_dir` that show a run was there: its checkpoints, a
    metrics.jsonl with a record, a summary.json; empty for a new folder."""
    run_dir = Path(run_dir)
    folder = run_dir / CHECKPOINTS
    found = sorted(folder.glob("*.pt")) if folder.is_dir() else []
    for name in RECORDS:
        path = run_dir / name
        try:
            if path.exists() and (not path.is_file() or path.stat().st_size > 0):
                found.append(path)
        except OSError:
            found.append(path)
    return found


def holds_a_run(run_dir) -> bool:
    """True when the folder has any trace of a run (not only a last.pt)."""
    return bool(run_traces(run_dir))


def run_of(path) -> Path | None:
    """The run folder that `path` is one of the own files of (a checkpoint, its
    metrics, summary, log, .hydra/ or TensorBoard file), else None."""
    path = Path(path).resolve()          # through a link: the file a write would replace
    for depth, folder in enumerate(path.parents):
        if depth > 2:
            return None
        inside = path.relative_to(folder).parts
        owned = (len(inside) == 1 and inside[0] in OWN_FILES) or \
            (len(inside) > 1 and inside[0] in OWN_FOLDERS)
        if owned and holds_a_run(folder):
            return folder
    return None


def check_not_run_file(option: str, path, allow: str | None = None) -> None:
    """Refuse to write `path` when it exists and is a run's own file (`nmt.average
    --output RUN/checkpoints/last.pt` would replace the checkpoint the run
    continues from). `allow`: the option that lets the user write it anyway."""
    target = Path(path)
    if not target.exists():
        return
    run = run_of(target)
    if run is None:
        return
    what = (" (the checkpoint it continues from)" if target.name == "last.pt" and
            target.parent.name == CHECKPOINTS else "")
    also = f", or add {allow} to replace it" if allow else ""
    raise NmtError(f"{option} {path} belongs to the run in {run}{what}; writing it would replace the "
                   f"run's own file; choose another file{also}")
