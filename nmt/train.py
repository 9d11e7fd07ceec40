"""python -m nmt.train [overrides]: config in, trainer out, nothing else."""

import logging
import os
import sys
from contextlib import nullcontext
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from hydra.types import RunMode
from omegaconf import DictConfig

from nmt.errors import NmtError

log = logging.getLogger("nmt.train")


class JobFailed(CompactHydraException):
    """One job of a --multirun sweep failed: the others still run, and Hydra
    reports this one-line message with the job's overrides at the end."""


def check_config(cfg: DictConfig) -> None:
    """Mistakes the config alone reveals, found before any data is read."""
    from nmt.models.build import check_combination

    positional = str(cfg.model.positional.get("kind", "none"))
    check_combination(cfg.model, positional)
    if positional == "learned":
        try:
            table, max_len = int(cfg.model.positional.max_len), int(cfg.data.get("max_len", 100))
        except (TypeError, ValueError):
            return                          # not numbers: the parts that read them say so
        if table < max_len + 1:             # the decoder reads <s> plus up to max_len subwords
            raise NmtError(f"model.positional.max_len={table} is shorter than the longest sentence "
                           f"(data.max_len={max_len} subwords, +1 for <s>); set "
                           f"model.positional.max_len={max_len + 1} or data.max_len={table - 1}")


def _log_to_file(message: str) -> None:
    """The error goes into train.log; the terminal gets only the `nmt: error:` line."""
    record = log.makeRecord(log.name, logging.ERROR, __file__, 0, message, None, None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)


@hydra.main(config_path="../configs", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float:
    from nmt.training.run_dir import RunDirLock

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        check_config(cfg)
        # A second run on this folder refuses before reading data. Under torchrun
        # every rank runs this function; the folder belongs to rank 0.
        lock = RunDirLock(run_dir) if int(os.environ.get("RANK", "0")) == 0 else nullcontext()
        with lock:
            from nmt.training.trainer import Trainer  # heavy imports after Hydra parsed the command line

            trainer = Trainer(cfg, run_dir)
            code = trainer.fit()
    except NmtError as error:
        _log_to_file(str(error))
        print(f"nmt: error: {error}", file=sys.stderr, flush=True)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise JobFailed(f"nmt: error: {error}") from None
        sys.exit(1)
    except KeyboardInterrupt:            # before the training loop took over Ctrl-C
        print("nmt: interrupted before training started; this run wrote no checkpoint",
              file=sys.stderr, flush=True)
        sys.exit(130)
    metrics = getattr(trainer, "final_metrics", None)
    if code or metrics is None:         # 130 after Ctrl-C; 0 after SIGTERM, before any validation
        sys.exit(code)
    return float(metrics["bleu"])


if __name__ == "__main__":
    main()
