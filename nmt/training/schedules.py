"""Learning-rate schedules: one `step(metric=None)` call per optimiser update
or validation, and state_dict/load_state_dict for exact resume."""

import math

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR, ReduceLROnPlateau


class ConstantSchedule:
    """The optimiser's learning rate, unchanged."""

    def __init__(self, optimizer: Optimizer):
        self.optimizer = optimizer

    def step_update(self) -> None:
        pass

    def step_validation(self, metric: float) -> None:
        pass

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class InverseSqrtSchedule(ConstantSchedule):
    """Vaswani et al. 2017, Attention Is All You Need, Sec. 5.3, normalised
    so that the peak equals the configured learning rate lr0:

        lr(step) = lr0 * min(step / warmup, sqrt(warmup / step))
    """

    def __init__(self, optimizer: Optimizer, warmup_steps: int = 4000):
        super().__init__(optimizer)
        warmup = max(1, warmup_steps)
        self.scheduler = LambdaLR(
            optimizer, lambda s: min((s + 1) / warmup, math.sqrt(warmup / (s + 1))))

    def step_update(self) -> None:
        self.scheduler.step()

    def state_dict(self) -> dict:
        return self.scheduler.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.scheduler.load_state_dict(state)


class PlateauSchedule(ConstantSchedule):
    """Reduce-on-plateau on the validation metric (higher is better for BLEU
    and chrF, lower for loss: the trainer passes a value to maximise)."""

    def __init__(self, optimizer: Optimizer, factor: float = 0.5, patience: int = 2,
                 min_lr: float = 1e-6):
        super().__init__(optimizer)
        self.scheduler = ReduceLROnPlateau(optimizer, mode="max", factor=factor,
                                           patience=patience, min_lr=min_lr)

    def step_validation(self, metric: float) -> None:
        self.scheduler.step(metric)

    def state_dict(self) -> dict:
        return self.scheduler.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.scheduler.load_state_dict(state)
