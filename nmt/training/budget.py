"""trainer.max_minutes: a wall-clock budget for the whole run, validations
and their heatmaps included, carried across resumptions in the checkpoint.

The final validation runs after the budget is spent, so the loop keeps back
`reserve` seconds for it (what the last validation took, and the heatmaps
still to be drawn): the run ends on time rather than one validation late.
Once the budget is spent, no heatmap card starts that would end after
`deadline()`."""

import time


class TimeBudget:
    def __init__(self, max_minutes: float):
        self.max_minutes = max_minutes  # 0 = no budget
        self.seconds_before = 0.0  # spent by the processes before this one
        self.started: float | None = None  # when this process's loop began
        # the largest share agreed in this process, which budget_decay's rate follows: it
        # never falls, so a later, smaller estimate of `reserve` does not raise the rate again
        self.highest_spent = 0.0
        self.spent = 0.0
        self.reserve = 0.0  # seconds kept back for the final validation (not saved: measured anew)

    @property
    def spent(self) -> float:
        """The share used, as every rank agreed after the last update: it ends the run at 1."""
        return self._spent

    @spent.setter
    def spent(self, share: float) -> None:
        self._spent = share
        self.highest_spent = max(self.highest_spent, share)

    def start(self) -> None:
        self.started = time.perf_counter()

    def wall_seconds(self) -> float:
        """Wall-clock seconds in the training loop over the whole run, resumptions added up."""
        now = 0.0 if self.started is None else time.perf_counter() - self.started
        return self.seconds_before + now

    def fraction(self, wall_seconds: float | None = None) -> float:
        """The share of the budget used so far, `reserve` counted as used (of
        `wall_seconds` alone when given): 0 without a budget, 1 when it is used up."""
        if not self.max_minutes:
            return 0.0
        wall = self.wall_seconds() + self.reserve if wall_seconds is None else wall_seconds
        return min(1.0, wall / (60 * self.max_minutes))

    def deadline(self) -> float:
        """The perf_counter time at which the budget ends (this process's loop has started)."""
        return self.started + 60 * self.max_minutes - self.seconds_before

    def state_dict(self) -> dict:
        return {"wall_seconds": self.wall_seconds()}

    def load_state_dict(self, state: dict) -> None:
        self.seconds_before = float(state.get("wall_seconds", 0.0))
