"""Learning-rate schedules: one `step_update(spent)` call per optimiser update
(spent: the fraction of the trainer's budget used so far), one
`step_validation(metric)` per validation, and state_dict/load_state_dict for
exact resume."""

import math

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR, ReduceLROnPlateau


class ConstantSchedule:
    """The optimiser's learning rate, unchanged."""

    def __init__(self, optimizer: Optimizer):
        self.optimizer = optimizer

    def step_update(self, spent: float = 0.0) -> None:
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

    def step_update(self, spent: float = 0.0) -> None:
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


class BudgetDecaySchedule(ConstantSchedule):
    """Linear warm-up, then linear decay over the trainer's budget (Li, Yumer and
    Ramanan 2020, Budgeted Training: the learning rate reaches its floor when the
    budget ends, whichever limit ends it, updates or minutes):

        lr = lr0 * min(step / warmup, 1) * (1 - (1 - final_fraction) * spent)

    spent = max(step / trainer.max_steps, minutes / trainer.max_minutes), in [0, 1],
    measured by the trainer after each update (the same on every rank; the largest share
    so far in the process, so a revised estimate of the minutes left never raises the rate).
    """

    def __init__(self, optimizer: Optimizer, warmup_steps: int = 800, final_fraction: float = 0.0):
        super().__init__(optimizer)
        self.warmup, self.final = max(1, warmup_steps), float(final_fraction)
        self.base_lrs = [group["lr"] for group in optimizer.param_groups]
        self.step_count, self.spent = 0, 0.0
        self._apply()

    def factor(self) -> float:
        warm = min((self.step_count + 1) / self.warmup, 1.0)
        return warm * (1.0 - (1.0 - self.final) * min(max(self.spent, 0.0), 1.0))

    def _apply(self) -> None:
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = base * self.factor()

    def step_update(self, spent: float = 0.0) -> None:
        self.step_count, self.spent = self.step_count + 1, float(spent)
        self._apply()

    def state_dict(self) -> dict:
        return {"base_lrs": self.base_lrs, "step_count": self.step_count, "spent": self.spent}

    def load_state_dict(self, state: dict) -> None:
        self.base_lrs, self.step_count, self.spent = list(state["base_lrs"]), int(state["step_count"]), \
            float(state["spent"])
        self._apply()
