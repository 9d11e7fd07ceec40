"""A run folder belongs to one run: a lock, the refusals that change nothing,
the `.hydra/` record written only by the run that owns the folder, and where
`trainer.resume=auto` looks.

Hydra would write `.hydra/config.yaml`, `hydra.yaml` and `overrides.yaml`
before `nmt.train` could refuse a folder that another run is using, or that
already holds a finished run. So `configs/config.yaml` sets
`hydra.output_subdir: null` (Hydra writes nothing), the file log opens only
at its first record (`delay: true`), and `nmt.train` writes the `.hydra/`
files itself once `RunDirLock` holds the folder (`write_hydra_record`).
`RunDirCheck`, a Hydra callback, refuses a `hydra.run.dir` that is a file
before Hydra tries to create it.
"""

import fcntl
import os
import sys
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import OmegaConf

from nmt.base.atomic import atomic_write, write_all
from nmt.base.cli import print_error
from nmt.base.errors import NmtError
from nmt.base.folders import make_folder
from nmt.base.file_inputs import refuse_special, special_kind
from nmt.base.run_files import holds_a_run, run_traces
from nmt.store.metrics_log import parse_record
from nmt.training import refused_start

HYDRA_SUBDIR = ".hydra"
_held: dict[Path, int] = {}     # lock file -> how many RunDirLocks of this process hold it


def holds_a_run_error(run_dir: Path) -> NmtError:
    """Why a new run may not start in a folder that holds one, and how that run
    can go on: from its last.pt, or (when last.pt is gone) from the newest
    checkpoint with optimiser state, named by path."""
    run_dir = Path(run_dir)
    if (run_dir / "checkpoints" / "last.pt").exists():
        return NmtError(f"{run_dir / 'checkpoints'} already holds a run; continue it with "
                        "trainer.resume=auto or choose another hydra.run.dir")
    traces = ", ".join(p.name for p in run_traces(run_dir)[:4])
    start = (f"{run_dir} already holds a run ({traces}) whose checkpoints/last.pt is gone, so "
             "trainer.resume=auto cannot continue it and a new run would replace its files; ")
    found = resumable_checkpoint(run_dir)
    if found is not None:
        path, step = found
        return NmtError(start + f"continue it from step {step} with trainer.resume={path} (its optimiser "
                        "state is there), or choose another hydra.run.dir")
    return NmtError(start + "none of its checkpoints holds optimiser state to continue from; train "
                    "on from one's weights with trainer.resume=PATH trainer.resume_weights_only=true "
                    "in another hydra.run.dir")


def resumable_checkpoint(run_dir: Path) -> tuple[Path, int] | None:
    """The run's newest checkpoint that holds optimiser state and progress
    (a step_N.pt or best.pt), with its step; None when there is none."""
    from nmt.store.checkpoints import RESUME_KEYS, load_checkpoint, step_checkpoints   # torch: only here

    folder = Path(run_dir) / "checkpoints"
    best = None
    for path in [*step_checkpoints(folder), folder / "best.pt"]:
        try:
            state = load_checkpoint(path, mmap=True)
            step = int(state["progress"]["step"])
        except (NmtError, KeyError, TypeError, ValueError):
            continue                    # damaged, or weights only
        if all(key in state for key in RESUME_KEYS) and (best is None or step > best[1]):
            best = (path, step)
    return best


def not_a_folder(run_dir: Path) -> Path | None:
    """The run folder itself or the first of its parents that is a file, else None."""
    for path in (Path(run_dir), *Path(run_dir).parents):
        if path.exists() and not path.is_dir():
            return path
    return None


def _not_a_folder_error(run_dir: Path, blocker: Path) -> NmtError:
    what = "is a file" if blocker == Path(run_dir) else f"is inside {blocker}, which is a file"
    return NmtError(f"hydra.run.dir={run_dir} {what}, not a folder; choose another hydra.run.dir")


class RunDirLock:
    """An exclusive lock on the run folder for the lifetime of a run.

    A second run pointed at the same folder refuses at once instead of
    overwriting the first one's checkpoints; with `fresh=True` (no
    trainer.resume, or a start from weights only) a folder that holds any
    trace of a run (nmt.base.run_files) is refused too. A refusal changes nothing
    in the folder. Re-entrant within a process: `nmt.train` takes it before
    reading any data and `Trainer.fit` again.
    """

    def __init__(self, run_dir: Path, fresh: bool = False):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / ".lock"
        self.fresh = fresh
        self.handle = None

    def __enter__(self):
        blocker = not_a_folder(self.run_dir)
        if blocker is not None:
            raise _not_a_folder_error(self.run_dir, blocker)
        key = self.path.resolve()
        if _held.get(key):
            _held[key] += 1
            return self
        if self.fresh and holds_a_run(self.run_dir) and not self.path.exists():
            raise holds_a_run_error(self.run_dir)      # no lock file to create: no live run either
        handle, made = self._locked_handle()
        if self.fresh and holds_a_run(self.run_dir):   # busy says more, so it is asked first
            self._let_go(handle, made)
            raise holds_a_run_error(self.run_dir)
        try:                             # the holder's pid, for a person reading the folder
            os.ftruncate(handle.fileno(), 0)
            write_all(handle.fileno(), str(os.getpid()).encode("ascii"))
        except OSError as error:         # a full disk: the lock file this run made goes again
            self._let_go(handle, made)
            raise NmtError(f"cannot write {self.path}: {error.strerror or error}; free disk space or "
                           "choose another hydra.run.dir") from None
        self.handle, _held[key] = handle, 1
        return self

    def _locked_handle(self):
        """The lock file, open and locked, and whether this call made it. A lock file
        that a releasing run removed between the open and the lock is opened again."""
        for _ in range(10):
            made = not os.path.lexists(self.path)
            handle = self._open_lock_file()
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                raise NmtError(f"another run is using {self.run_dir}; wait for it or choose "
                               "another hydra.run.dir") from None
            except OSError as error:
                self._let_go(handle, made)
                raise NmtError(f"cannot lock {self.path}: {error.strerror or error}; choose another "
                               "hydra.run.dir") from None
            try:
                current = os.stat(self.path).st_ino
            except OSError:
                current = None
            if current == os.fstat(handle.fileno()).st_ino:
                return handle, made
            handle.close()               # locked a file no longer at the path: try the new one
        raise NmtError(f"cannot lock {self.path}: it keeps being replaced; choose another hydra.run.dir")

    def _let_go(self, handle, made: bool) -> None:
        """Unlock and close; remove the lock file when this run made it (still locked: no one else holds it)."""
        if made:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()

    def _open_lock_file(self):
        """RUN/.lock opened for the lock; one NmtError line when it is a folder, a
        FIFO or anything but the regular file nmt.train writes, or cannot be opened."""
        kind = "a folder" if self.path.is_dir() else special_kind(self.path)
        if kind is not None:
            raise NmtError(f"hydra.run.dir={self.run_dir}: its {self.path.name} is {kind}, not the lock file "
                           "nmt.train writes; remove it or choose another hydra.run.dir")
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            return open(self.path, "a+")     # not "w": the holder's pid stays readable
        except OSError as error:
            raise NmtError(f"cannot open {self.path}: {error.strerror or error}; choose another "
                           "hydra.run.dir") from None

    def __exit__(self, *exc):
        key = self.path.resolve()
        _held[key] -= 1
        if _held[key] == 0:              # the run is over: its lock file goes, removed while still held
            del _held[key]
            self._let_go(self.handle, made=True)
        return False


def write_hydra_record(run_dir: Path, task_cfg) -> None:
    """`.hydra/config.yaml`, `hydra.yaml` and `overrides.yaml`, as Hydra writes them,
    by the run that holds the folder (call it inside RunDirLock). Each is written
    whole; when one cannot be (a full disk), the files this call added and the
    folder it made are removed again (a resumed run's earlier ones stay)."""
    hydra_cfg = HydraConfig.get()
    folder = Path(run_dir) / HYDRA_SUBDIR
    added = [] if os.path.lexists(folder) else [folder]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, node in (("config.yaml", task_cfg),
                           ("hydra.yaml", OmegaConf.create({"hydra": hydra_cfg})),
                           ("overrides.yaml", hydra_cfg.overrides.task)):
            if not os.path.lexists(folder / name):
                added.insert(0, folder / name)
            atomic_write(folder / name, OmegaConf.to_yaml(node).encode("utf-8"))
    except OSError as error:
        for path in added:               # files first, then the folder
            try:
                path.rmdir() if path == folder else path.unlink(missing_ok=True)
            except OSError:
                pass
        raise NmtError(f"cannot write {folder}: {error.strerror or error}; "
                       "choose another hydra.run.dir") from None


class RunDirCheck(Callback):
    """Hydra callback (configs/config.yaml, hydra.callbacks): a `hydra.run.dir`
    that is a file, or lies inside one, is one `nmt: error:` line before Hydra
    tries to create the folder (which is a traceback)."""

    # Hydra turns a callback's exception into a warning and goes on, so the
    # callback says the line itself and ends the process.
    def on_run_start(self, config, **kwargs) -> None:
        run_dir = Path(str(OmegaConf.select(config, "hydra.run.dir")))
        blocker = not_a_folder(run_dir)
        if blocker is not None:
            _refuse(str(_not_a_folder_error(run_dir, blocker)))
        refused_start.note_missing(run_dir)           # removed again if the run is refused
        try:
            make_folder(run_dir, "hydra.run.dir")       # as Hydra does next, but one line if it cannot
        except NmtError as error:
            _refuse(str(error))

    def on_multirun_start(self, config, **kwargs) -> None:
        sweep_dir = Path(str(OmegaConf.select(config, "hydra.sweep.dir")))
        blocker = not_a_folder(sweep_dir)
        if blocker is not None:
            _refuse(str(_not_a_folder_error(sweep_dir, blocker)).replace("hydra.run.dir", "hydra.sweep.dir"))
        refused_start.note_missing(sweep_dir)
        try:
            make_folder(sweep_dir, "hydra.sweep.dir")
            refused_start.keep_sweep_record(sweep_dir)   # a refused sweep puts the old record back
        except NmtError as error:
            _refuse(str(error))
        except OSError as error:
            _refuse(f"cannot keep {sweep_dir / 'multirun.yaml'}: {error.strerror or error}; "
                    "choose another hydra.sweep.dir")


def _refuse(message: str) -> None:
    print_error(message)
    refused_start.finish()
    sys.exit(1)


def find_resume_checkpoint(resume, run_dir: Path, weights_only: bool = False) -> Path | None:
    """trainer.resume: null (fresh run), auto, or a checkpoint path;
    `weights_only` (trainer.resume_weights_only) needs a path.

    A path continues that checkpoint's run; in a folder that holds a run, only
    from one of that run's own checkpoints (another run's would replace its
    files). auto continues this run folder's own checkpoints/last.pt, or
    starts fresh when the folder holds no run at all; a run whose last.pt is
    gone is refused, naming the checkpoint it can continue from. It never
    looks in another folder (a checkpoint there may come from other data,
    another vocabulary or another model).
    """
    if weights_only and (is_fresh(resume) or str(resume) == "auto"):
        raise NmtError("trainer.resume_weights_only=true starts a new run from the weights of a "
                       "checkpoint; name it with trainer.resume=PATH")
    if resume in (None, "", "null", False):
        return None
    if str(resume) != "auto":
        path = Path(str(resume))
        refuse_special(path, "trainer.resume=", "give a checkpoint file")
        if path.is_dir():
            raise NmtError(f"trainer.resume={resume} is a directory; give the .pt file inside it (a "
                           "run's is checkpoints/last.pt), or trainer.resume=auto with hydra.run.dir "
                           "set to the run's folder")
        if not path.is_file():
            raise NmtError(f"trainer.resume={resume}: no such checkpoint file")
        own = (Path(run_dir) / "checkpoints").resolve()
        if path.resolve().parent != own and holds_a_run(run_dir) and not weights_only:
            traces = ", ".join(p.name for p in run_traces(run_dir)[:4])
            raise NmtError(f"hydra.run.dir={run_dir} holds another run ({traces}); continuing {path} there "
                           "would replace its files; choose a new hydra.run.dir, or resume one of that "
                           "run's own checkpoints")
        return path
    own = Path(run_dir) / "checkpoints" / "last.pt"
    if own.is_file():
        return own
    if holds_a_run(run_dir):
        raise holds_a_run_error(run_dir)
    return None


def is_fresh(resume) -> bool:
    """True when trainer.resume asks for a new run (null)."""
    return resume in (None, "", "null", False)


def drop_metrics_after(path: Path, step: int) -> dict | None:
    """Keep the metrics.jsonl records of steps <= `step` (where a run resumes; 0
    when it starts over), so that after a kill and a resume each step is
    written once. A line that is not a whole JSON record (a write cut by the
    kill) is dropped too. Returns the record of `step` itself when there is
    one: the run validated there before it stopped, and need not again."""
    path = Path(path)
    if not path.exists():
        return None
    refuse_special(path, "", "it should be the run's metrics log; move it away")
    kept, dropped, same = [], 0, None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        record = parse_record(line)
        if record is not None and record["step"] <= step:
            kept.append(line)
            if record["step"] == step:
                same = record
        else:
            dropped += 1
    if dropped:
        try:
            atomic_write(path, "".join(line + "\n" for line in kept).encode("utf-8"), durable=True)
        except OSError as error:
            raise NmtError(f"cannot rewrite {path}: {error.strerror or error}; "
                           "free disk space or choose another hydra.run.dir") from None
    return same
