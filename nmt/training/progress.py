"""Where a run stands: the counters and random state that a resumed run
continues from, so that it trains exactly as if it had not stopped."""

import logging
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

import torch

from nmt.base.errors import NmtError

log = logging.getLogger("nmt.train")


@dataclass
class Progress:
    step: int = 0  # optimiser updates done
    epoch: int = 0
    batch_index: int = 0  # this rank's batches of the epoch consumed
    best: float = -math.inf  # best validation score so far, higher is better
    bad_validations: int = 0  # validations since the last improvement
    baseline: float = 0.0  # hard attention's running reward baseline
    # wall time of the updates and of loading their batches (validations, checkpoints, heatmaps excluded)
    train_seconds: float = 0.0
    tokens_total: int = 0  # target tokens trained on
    step_scores: dict[int, float] = field(default_factory=dict)  # validated step -> score
    bad_steps: int = 0  # non-finite updates in a row (not saved: a resume starts at 0)
    skipped: int = 0  # non-finite updates skipped by this process
    last_validated: int | None = None
    window: tuple[int, float] = (0, 0.0)  # tokens_total, train_seconds when the last window began

    def skip_update(self, max_bad_steps: int, last: Path) -> None:
        """Count a non-finite update; the `max_bad_steps`-th in a row ends the run
        (NmtError naming `last`, the last good checkpoint, where there is one)."""
        self.bad_steps, self.skipped = self.bad_steps + 1, self.skipped + 1
        log.warning("non-finite loss at step %d: update skipped (%d in a row)", self.step + 1, self.bad_steps)
        if self.bad_steps >= max_bad_steps:
            where = f"last good checkpoint {last}" if last.exists() else "no checkpoint was written yet"
            raise NmtError(
                f"loss was not finite for {self.bad_steps} updates in a row at step "
                f"{self.step + 1}; {where}; lower optimizer.lr or use trainer.grad_clip"
            )

    def speed(self) -> float:
        """Target tokens per second of training wall time since the run began."""
        return self.tokens_total / self.train_seconds if self.train_seconds else 0.0

    def window_speed(self) -> float:
        """Target tokens per second of training wall time since the last call (or the
        start of this process), warm-up only in the first window; a new window begins."""
        tokens, seconds = self.tokens_total - self.window[0], self.train_seconds - self.window[1]
        self.window = (self.tokens_total, self.train_seconds)
        return tokens / seconds if seconds > 0 else 0.0

    def state_dict(self) -> dict:
        return {
            "step": self.step,
            "epoch": self.epoch,
            "batch_index": self.batch_index,
            "best": self.best,
            "bad_validations": self.bad_validations,
            "baseline": self.baseline,
            "train_seconds": self.train_seconds,
            "tokens_total": self.tokens_total,
            "step_scores": {str(k): v for k, v in self.step_scores.items()},
        }

    def load_state_dict(self, state: dict) -> None:
        self.step, self.epoch = int(state["step"]), int(state["epoch"])
        self.batch_index = int(state["batch_index"])
        self.best, self.bad_validations = float(state["best"]), int(state["bad_validations"])
        self.baseline, self.train_seconds = float(state["baseline"]), float(state["train_seconds"])
        self.tokens_total = int(state["tokens_total"])
        self.window = (self.tokens_total, self.train_seconds)
        self.step_scores = {int(k): float(v) for k, v in state.get("step_scores", {}).items()}


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def rng_state() -> dict:
    """Python's and torch's random generators (and CUDA's where there is one)."""
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    version, internal, gauss = state["python"]  # a checkpoint holds lists for the tuples
    random.setstate((version, tuple(internal), gauss))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
