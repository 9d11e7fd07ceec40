"""python -m nmt.train [overrides]: config in, trainer out, nothing else."""

if __name__ == "__main__":      # first of all: Ctrl-C during the seconds of imports below is one line too
    from nmt import signals

    signals.install("before training started; no checkpoint was written")

import logging
import os
import signal
import sys
from contextlib import nullcontext
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from hydra.types import RunMode
from omegaconf import DictConfig

from nmt import signals
from nmt.cli_checks import (close_stdout, exit_code_of, guard_stdout_logging, hydra_prints,
                            run_printing_checked)
from nmt.errors import NmtError

log = logging.getLogger("nmt.train")


class JobFailed(CompactHydraException):
    """One job of a --multirun sweep failed: the others still run, and Hydra
    reports this one-line message with the job's overrides at the end."""


def check_config(cfg: DictConfig, choices: dict | None = None) -> None:
    """Mistakes the config alone reveals, found before any data is read: every
    value against its rule (nmt/config_schema.py), the data settings that need
    no file, then the model (its parts' settings, their combination, and a
    build on the meta device) and the trainer settings that depend on it.
    `choices` is Hydra's runtime.choices, to name options in messages."""
    from nmt.config_schema import validate
    from nmt.data.corpora import check_data_config
    from nmt.models.build import check_group_settings, check_model_config
    from nmt.training.run_dir import make_folder

    validate(cfg)
    positional = str(cfg.model.positional.get("kind", "none"))
    if positional == "learned":
        table, max_len = int(cfg.model.positional.max_len), int(cfg.data.get("max_len", 100))
        if table < max_len + 1:             # the decoder reads <s> plus up to max_len subwords
            raise NmtError(f"model.positional.max_len={table} is shorter than the longest sentence "
                           f"(data.max_len={max_len} subwords, +1 for <s>); set "
                           f"model.positional.max_len={max_len + 1} or data.max_len={table - 1}")
    window = cfg.model.attention.get("max_len")      # luong_location: one score per source position
    if window is not None and int(window) < int(cfg.data.get("max_len", 100)):
        max_len = int(cfg.data.get("max_len", 100))
        raise NmtError(f"model.attention.max_len={window} is shorter than the longest source "
                       f"(data.max_len={max_len} subwords); set model.attention.max_len={max_len} "
                       f"or data.max_len={window}")
    if cfg.model.get("share_embeddings", False) and not cfg.data.get("joint_vocab", True):
        raise NmtError("model.share_embeddings=true needs one vocabulary for both languages; "
                       "set data.joint_vocab=true or model.share_embeddings=false")
    for group in ("optimizer", "schedule"):
        check_group_settings(cfg.get(group), group, choices)
    check_data_config(cfg.data)
    model = check_model_config(cfg.model, int(cfg.data.get("vocab_size", 8000)), choices)
    check_training_settings(cfg, model)
    make_folder(cfg.get("cache_dir", "data"), "cache_dir")   # last: only a run that passed makes it


def check_training_settings(cfg: DictConfig, model) -> None:
    """trainer settings that only work with others: the device, fp16, the
    coverage penalty's beam, guided alignment's links, layer and head (checked
    against `model`, built on the meta device). Trainer checks them again."""
    from nmt.decoding.limits import MAX_LEN_EXTRA, MAX_LEN_RATIO, check_search_limits
    from nmt.training.device import resolve_device
    from nmt.training.guided_alignment import GuidedAlignmentLoss
    from nmt.translator import length_limits

    tc = cfg.trainer
    device = resolve_device(str(tc.device))
    if tc.precision == "fp16" and device.type != "cuda":
        raise NmtError("trainer.precision=fp16 needs a GPU; use fp32 or bf16 on CPU")
    limits = length_limits(cfg)          # the validation search's, as Trainer builds its Translator
    check_search_limits(limits["max_src_len"], MAX_LEN_RATIO, MAX_LEN_EXTRA, limits["max_tgt_len"])
    beta = tc.get("coverage_penalty", 0.0)
    if beta and int(tc.val_beam_size) < 2:
        raise NmtError(f"trainer.coverage_penalty={beta} re-ranks the validation beam's hypotheses; "
                       "set trainer.val_beam_size to 2 or more")
    guided = tc.get("guided_alignment") or {}
    if guided.get("weight", 0.0):
        if not cfg.data.get("train_alignments"):
            raise NmtError("trainer.guided_alignment.weight > 0 needs data.train_alignments, a file of "
                           "word links 'i-j' per training pair (python -m nmt.data.alignments toy "
                           "FILE writes the toy task's)")
        GuidedAlignmentLoss(layer=guided.get("layer", -2), head=guided.get("head", 0)).check(model.decoder)


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


@hydra.main(config_path="../configs", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float:
    global _owns_folder
    from nmt.training.checkpoints import check_resume_data, check_resume_model, check_resume_state
    from nmt.training.run_dir import RunDirLock, find_resume_checkpoint, is_fresh, write_hydra_record

    _owns_folder = False
    guard_stdout_logging()               # a full disk under the console log: one line at the end
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        check_config(cfg, HydraConfig.get().runtime.choices)
        # A second run on this folder refuses before reading data, and before writing
        # anything there. Under torchrun every rank runs this function; the folder
        # belongs to rank 0.
        weights_only = bool(cfg.trainer.get("resume_weights_only", False))
        resume_from = find_resume_checkpoint(cfg.trainer.resume, run_dir, weights_only)   # a missing file: one line now
        if resume_from is not None:         # other data: refused before reading it, changing nothing
            check_resume_state(resume_from, weights_only)   # weights only (averaged): said before any data
            check_resume_data(resume_from, cfg.data, force=bool(cfg.trainer.get("resume_force", False)))
            check_resume_model(resume_from, cfg.model)    # another model: refused before .hydra is written
        main_rank = int(os.environ.get("RANK", "0")) == 0
        fresh = is_fresh(cfg.trainer.resume) or weights_only     # a new run: never into a run's folder
        lock = RunDirLock(run_dir, fresh=fresh) if main_rank else nullcontext()
        with lock:
            _owns_folder = main_rank
            if main_rank:
                write_hydra_record(run_dir, cfg)
            from nmt.training.trainer import Trainer  # heavy imports after Hydra parsed the command line

            trainer = Trainer(cfg, run_dir)
            code = trainer.fit()
    except NmtError as error:
        _log_to_file(str(error))
        print(f"nmt: error: {error}", file=sys.stderr, flush=True)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise JobFailed(f"nmt: error: {error}") from None
        sys.exit(1)
    except KeyboardInterrupt:            # Ctrl-C when main() is called without signals.install()
        signals.report(signal.SIGINT, "before training started; no checkpoint was written")
        sys.exit(130)
    metrics = getattr(trainer, "final_metrics", None)
    if code or metrics is None:         # 130 after Ctrl-C, 143 after SIGTERM
        sys.exit(code)
    return float(metrics["bleu"])


if __name__ == "__main__":
    if hydra_prints(sys.argv[1:]):    # --help, --cfg job, --info: Hydra's print, checked
        sys.exit(close_stdout(run_printing_checked(main)))
    sys.exit(close_stdout(exit_code_of(main)))   # standard output's last flush, checked: one line, not exit 120
