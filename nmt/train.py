"""python -m nmt.train [overrides]: config in, trainer out, nothing else."""

import logging
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from nmt.errors import NmtError

log = logging.getLogger("nmt.train")


@hydra.main(config_path="../configs", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float:
    from nmt.training.trainer import Trainer  # heavy imports after Hydra parsed the command line

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        trainer = Trainer(cfg, run_dir)
        code = trainer.fit()
    except NmtError as error:
        log.error("%s", error)
        print(f"nmt: error: {error}", file=sys.stderr, flush=True)
        sys.exit(1)
    if code:
        sys.exit(code)
    return float(trainer.final_metrics["bleu"])


if __name__ == "__main__":
    main()
