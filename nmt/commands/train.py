"""python -m nmt.train [overrides]: the config checked, the run folder locked,
the trainer built and run, and the end-of-run lines printed.

From Python (a notebook, a script), `fit` trains as the command does and
returns the run folder and its summary instead of printing them:

    from nmt.train import fit
    result = fit(["experiment=quickstart", "trainer.max_steps=100"])
    result.run_dir, result.summary["best"], result.best_checkpoint
"""


import copy
import logging
import shlex
import signal
import sys
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import hydra
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import configure_log
from hydra.errors import CompactHydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict

from nmt.base import signals
from nmt.base.cli import print_error, runnable
from nmt.base.cli_checks import (exit_code_of, guard_stdout_logging, hydra_prints, print_checked, run_printing_checked,
                            write_stdout)
from nmt.base.config_files import CONFIGS
from nmt.base.errors import NmtError
from nmt.base.run_members import check_run_members
from nmt.commands.train_checks import check_overrides, help_page
from nmt.training import refused_start
from nmt.training.torchrun_env import torchrun_ranks

log = logging.getLogger("nmt.train")


class JobFailed(CompactHydraException):
    """One job of a --multirun sweep failed: the others still run, and Hydra
    reports this one-line message with the job's overrides at the end."""


_owns_folder = False    # True once this job holds its run folder: only then may it write there


def _log_to_file(message: str) -> None:
    """The error goes into train.log; the terminal gets only the `nmt: error:` line.
    A run refused before it held its folder writes nothing there (another run's log)."""
    if not _owns_folder:
        return
    record = log.makeRecord(log.name, logging.ERROR, __file__, 0, message, None, None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)


@hydra.main(config_path=str(CONFIGS), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float:
    guard_stdout_logging()               # a full disk under the console log: one line at the end
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        trainer, code = _fit(cfg, run_dir, HydraConfig.get().runtime.choices)
        if isinstance(trainer, tuple):   # a resume with nothing to train: its line, no file changed
            write_stdout(trainer[1], keep_going=True)
            return float(trainer[0].get("bleu", float("nan")))
    except NmtError as error:
        _log_to_file(str(error))
        print_error(error)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            signals.next_job()                   # the sweep goes on: a later signal is the next job's
            raise JobFailed(f"nmt: error: {error}") from None
        if "nmt.training.distributed" in sys.modules:   # a lost torchrun peer: no waiting at exit
            sys.modules["nmt.training.distributed"].exit_after_lost_peer(1)
        sys.exit(1)
    except KeyboardInterrupt:            # Ctrl-C when main() is called without signals.install()
        signals.report(signal.SIGINT, "before training started; no checkpoint was written")
        sys.exit(130)
    if code or trainer.final_metrics is None:   # 130 after Ctrl-C, 143 after SIGTERM
        sys.exit(code)
    # rank 0 of a run that finished; a sweep's jobs leave the next commands to its last line
    if trainer.summary is not None and HydraConfig.get().mode != RunMode.MULTIRUN:
        example = trainer.valid_pairs[0][0] if trainer.valid_pairs else None
        write_stdout("\n".join(finish_lines(run_dir, trainer.summary, trainer.settings, example)) + "\n",
                     keep_going=True)
    return float(trainer.final_metrics["bleu"])


def _fit(cfg: DictConfig, run_dir: Path, choices: dict) -> tuple:
    """Check the config, hold the run folder, build the trainer and train:
    (the trainer, its exit code: 0, or 130/143 after a stop signal). A resume of a
    finished run with nothing to train: ((its summary, the line to print), 0)."""
    global _owns_folder
    from nmt.training.config_checks import check_config

    _owns_folder = False
    rank, _, _ = torchrun_ranks()        # RANK=abc, RANK=1 alone: one line, nothing written
    check_config(cfg, choices)           # settings and paths before torch loads
    check_run_members(run_dir)           # a FIFO, a folder or a link loop as metrics.jsonl, ...: one line
    # heavy imports once the config passed
    from tqdm.contrib.logging import logging_redirect_tqdm

    from nmt.training.build import build_trainer
    from nmt.training.resume_checks import check_resume_data, check_resume_model, check_resume_state, finished_already
    from nmt.training.run_command import resume_difference
    from nmt.training.run_dir import RunDirLock, find_resume_checkpoint, is_fresh, write_hydra_record

    # A second run on this folder refuses before reading data, and before writing
    # anything there. Under torchrun every rank runs this function; the folder
    # belongs to rank 0.
    weights_only = bool(cfg.trainer.resume_weights_only)
    resume_from = find_resume_checkpoint(cfg.trainer.resume, run_dir, weights_only)   # missing: one line
    if resume_from is not None:         # other data: refused before reading it, changing nothing
        check_resume_state(resume_from, weights_only)   # weights only (averaged): said before any data
        try:
            check_resume_data(resume_from, cfg.data, force=bool(cfg.trainer.resume_force))
            check_resume_model(resume_from, cfg.model)    # another model: refused before .hydra is written
        except NmtError as refusal:    # an override left out (experiment=...): named, with the run's command
            raise resume_difference(resume_from, list(HydraConfig.get().overrides.task), refusal) from None
    main_rank = rank == 0
    fresh = is_fresh(cfg.trainer.resume) or weights_only     # a new run: never into a run's folder
    lock = RunDirLock(run_dir, fresh=fresh) if main_rank else nullcontext()
    with lock:                          # a busy folder is said first; every rank asks the same
        done = finished_already(resume_from, run_dir, cfg.trainer) if resume_from and not weights_only else None
        if done is not None:
            return done, 0
        if main_rank:
            write_hydra_record(run_dir, cfg)
        _owns_folder = main_rank        # from here an error goes into train.log too
        trainer = build_trainer(cfg, run_dir)
        with logging_redirect_tqdm():   # log lines go above the progress bar, never inside it
            guard_stdout_logging()      # tqdm's handler too: a full disk is one line at the end
            code = trainer.fit()
    return trainer, code


@dataclass
class TrainResult:
    """What `fit` returns: the run's folder and its summary.json record
    (step, stopped_by, best, the final validation's bleu/chrf/loss, and
    test_bleu/test_chrf where the data has a test set)."""
    run_dir: Path
    summary: dict

    @property
    def best_checkpoint(self) -> Path:
        """checkpoints/best.pt, or last.pt when no validation scored."""
        best = self.run_dir / "checkpoints" / "best.pt"
        return best if best.exists() else best.with_name("last.pt")


@contextmanager
def _job_state():
    """What `fit` sets for its run, as the command's process would (Hydra's config,
    the log to RUN/train.log), put back afterwards: the caller's logging and a later
    `fit` in the same process (a notebook, a test session) are as before."""
    loggers = [logging.getLogger()] + [lg for lg in list(logging.root.manager.loggerDict.values())
                                       if isinstance(lg, logging.Logger)]
    saved = [(lg, lg.level, list(lg.handlers), lg.disabled, lg.propagate) for lg in loggers]
    try:
        yield
    finally:
        for lg, level, handlers, disabled, propagate in saved:
            for handler in set(lg.handlers) - set(handlers):  # the run's own, its train.log included
                handler.close()
            lg.setLevel(level)
            lg.handlers[:], lg.disabled, lg.propagate = handlers, disabled, propagate
        HydraConfig.instance().cfg = None


def fit(overrides=(), run_dir=None) -> TrainResult:
    """Train as `python -m nmt.train OVERRIDES` does, in this process, and
    return the run folder and its summary.

    overrides: Hydra overrides, as on the command line, e.g.
    ["experiment=quickstart", "model/attention=bahdanau", "trainer.max_steps=200"].
    run_dir: the run folder (default: hydra.run.dir, outputs/DATE/TIME).
    The log goes to the console and to RUN/train.log, as the command's does.
    A problem nmt can name raises NmtError with its one line; a stop signal
    (Ctrl-C) raises NmtError naming the checkpoint to resume from.
    """
    overrides = [str(o) for o in overrides]
    check_overrides(overrides)                       # a typo: the command's line with the fix
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3", job_name="train"):
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
    run_dir = Path(run_dir if run_dir is not None else cfg.hydra.run.dir).resolve()
    with open_dict(cfg):
        cfg.hydra.runtime.output_dir = str(run_dir)
        cfg.hydra.overrides.task = overrides
    choices = OmegaConf.to_container(cfg.hydra.runtime.choices)
    task = copy.deepcopy(cfg)                        # the job's config, as Hydra hands it to main
    with open_dict(task):
        del task["hydra"]
    with _job_state():
        HydraConfig.instance().set_config(cfg)       # what the trainer reads, as under the command
        configure_log(cfg.hydra.job_logging, cfg.hydra.verbose)
        try:
            refused_start.note_missing(run_dir)     # a refused run leaves no folder of its own
            trainer, code = _fit(task, run_dir, choices)
        finally:
            refused_start.finish()
    if isinstance(trainer, tuple):
        return TrainResult(run_dir, dict(trainer[0]))
    if code or trainer.summary is None:
        raise NmtError(f"training in {run_dir} stopped before it finished (exit status {code}); "
                       f"continue it with trainer.resume=auto and run_dir={str(run_dir)!r}")
    return TrainResult(run_dir, dict(trainer.summary))


def finish_lines(run_dir: Path, summary: dict, settings, example: str | None) -> list[str]:
    """The end-of-run summary: why the run stopped, the best validation score,
    where best.pt is, its test score where the data has a test set, and the
    next commands with the real paths, quoted for a POSIX shell, runnable from
    any shell (`nmt.base.cli.runnable`). `summary`:
    summary.json's record; `settings`: the run's TrainSettings."""
    run_dir = Path(run_dir).resolve()
    best_pt = run_dir / "checkpoints" / "best.pt"
    if not best_pt.exists():               # no validation scored (a non-finite score)
        best_pt = best_pt.with_name("last.pt")
    name = {"bleu": "BLEU", "chrf": "chrF", "loss": "loss"}[settings.metric]
    checkpoint = shlex.quote(str(best_pt))
    echo = f"echo {shlex.quote(example)} | " if example else ""
    lines = [f"nmt: finished at step {summary['step']}, {stop_reason(summary['stopped_by'], settings, name)}; "
             f"best validation {name} {summary['best']:.2f}",
             f"  {best_pt.stem} checkpoint: {best_pt}"]
    if "test_bleu" in summary:
        lines.append(f"  test set: BLEU {summary['test_bleu']:.2f} chrF {summary['test_chrf']:.2f} "
                     f"({summary['test_checkpoint']}, {summary['test_sentences']} sentences, "
                     f"{summary['test_search']})")
    return lines + ["  next:",
                    f"    {echo}{runnable('nmt.translate', 'nmt-translate')} --checkpoint {checkpoint}",
                    f"    {runnable('tensorboard.main', 'tensorboard')} --logdir "
                    f"{shlex.quote(str(run_dir / 'tensorboard'))}",
                    f"    {runnable('nmt.explore', 'nmt-explore')} --checkpoint {checkpoint}"]


def stop_reason(stopped_by: str, settings, metric_name: str) -> str:
    """Why the run stopped, from summary.json's `stopped_by` (a stop signal has a line of its own)."""
    return {"trainer.max_steps": f"trainer.max_steps={settings.max_steps} reached",
            "trainer.max_epochs": f"trainer.max_epochs={settings.max_epochs} done",
            "trainer.max_minutes": f"time budget trainer.max_minutes={settings.max_minutes:g} spent",
            "trainer.patience": f"early stopping: {metric_name} did not improve for "
                                f"trainer.patience={settings.patience} validations"}[stopped_by]


def run() -> int:
    """What the command does, to its exit code: a misspelt key or option is nmt's
    one line with the fix, --help is nmt's page, then Hydra runs `main`."""
    try:
        check_overrides(sys.argv[1:])     # a typo: nmt's line with the fix, not Hydra's advice of `+`
    except NmtError as error:
        print_error(error)
        return 1
    if any(arg in ("--help", "-h") for arg in sys.argv[1:]):      # nmt's page, not Hydra's stock text
        return print_checked(help_page())
    if hydra_prints(sys.argv[1:]):    # --cfg job, --info: Hydra's print, checked
        return run_printing_checked(main)
    try:
        torchrun_ranks()              # before Hydra makes a folder
    except NmtError as error:
        print_error(error)
        return 1
    try:
        return exit_code_of(main)
    finally:
        refused_start.finish()        # the folders a refused run made, a refused sweep's record


def cli() -> None:
    """The `nmt-train` console command: what `python -m nmt.train` runs."""
    from nmt.commands import run

    run("train")
