"""Learning-rate schedules against values computed by hand."""

import pytest
import torch

from nmt.training.schedules import BudgetDecaySchedule
from tests.helpers import train


def optimizer(lr=0.01):
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)


def test_budget_decay_by_hand():
    """lr = lr0 * min(step / warmup, 1) * (1 - (1 - final) * spent), lr0 = 0.01, warmup 4, final 0.1."""
    opt = optimizer()
    schedule = BudgetDecaySchedule(opt, warmup_steps=4, final_fraction=0.1)
    lr = lambda: opt.param_groups[0]["lr"]                         # noqa: E731
    assert lr() == pytest.approx(0.01 * 1 / 4)                      # the first update: 1/4 of the peak
    schedule.step_update(spent=0.1)
    assert lr() == pytest.approx(0.00455)                           # 0.01 * 2/4 * (1 - 0.9 * 0.1) = 0.005 * 0.91
    for spent in (0.2, 0.3):
        schedule.step_update(spent=spent)
    assert lr() == pytest.approx(0.0073)                            # warm (4/4): 0.01 * (1 - 0.9 * 0.3)
    schedule.step_update(spent=1.0)
    assert lr() == pytest.approx(0.001)                             # the floor: final_fraction * lr0
    schedule.step_update(spent=1.7)                                 # past the budget: still the floor
    assert lr() == pytest.approx(0.001)
    # exact resume: a new optimiser at lr0 and the saved state give the same rate
    other = optimizer()
    restored = BudgetDecaySchedule(other, warmup_steps=4, final_fraction=0.1)
    restored.load_state_dict(schedule.state_dict())
    assert other.param_groups[0]["lr"] == pytest.approx(0.001)
    restored.step_update(spent=0.5)
    assert other.param_groups[0]["lr"] == pytest.approx(0.01 * 0.55)


def test_budget_decay_reaches_its_floor_when_max_steps_ends(tmp_path, cache_dir):
    """Under the trainer: the learning rate of each update follows the updates spent of 20."""
    trainer = train(tmp_path, "experiment=quickstart", "schedule=budget_decay", "schedule.warmup_steps=5",
                    "schedule.final_fraction=0.0", "optimizer.lr=0.002", "trainer.max_steps=20",
                    "trainer.val_every=20", "trainer.log_every=1", "trainer.val_max_sentences=10",
                    "trainer.heatmap_sentences=0", cache_dir=cache_dir)
    assert trainer.step == 20
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    rates = {e.step: e.value for e in events.Scalars("train/lr")}
    # after update n the rate of update n + 1 is set from n of the 20 updates spent (warm from n = 4)
    for step in (5, 10, 15, 19):
        assert rates[step] == pytest.approx(0.002 * (1 - step / 20), rel=1e-6), step
    assert rates[20] == pytest.approx(0.0, abs=1e-12)
    assert rates[1] == pytest.approx(0.002 * 2 / 5 * (1 - 1 / 20), rel=1e-6)


def rates_of_a_timed_run(run_dir, cache_dir, minutes: float = 0.05) -> list[float]:
    """Train the quick-start preset under budget_decay for `minutes` (room for a million
    updates); the learning rate logged after each update, in order."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    train(run_dir, "experiment=quickstart", "schedule=budget_decay", "schedule.warmup_steps=1",
          "optimizer.lr=0.002", "trainer.max_steps=1000000", f"trainer.max_minutes={minutes}",
          "trainer.val_every=1000000", "trainer.log_every=1", "trainer.val_max_sentences=10",
          "trainer.heatmap_sentences=0", cache_dir=cache_dir)
    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    return [e.value for e in sorted(events.Scalars("train/lr"), key=lambda e: e.step)]


def test_budget_decay_follows_the_minutes_when_they_end_the_run(tmp_path, cache_dir):
    """A 3-second budget and room for a million updates: the minutes decide, so the rate never
    rises and is near its floor when the time ends."""
    rates = rates_of_a_timed_run(tmp_path, cache_dir)
    assert len(rates) >= 4, rates                                  # a few updates in 3 seconds
    assert all(later <= earlier for earlier, later in zip(rates, rates[1:])), rates
    assert rates[0] > 0.0015 and rates[-1] < 0.001, rates          # from near the peak to below half of it


def test_budget_decay_never_rises_when_the_reserve_estimate_shrinks(tmp_path, cache_dir, monkeypatch):
    """The time kept back for the end of the run is an estimate, revised as the search is timed:
    here 1.2 s (a fifth of a 6-second budget, room for a slow machine) for three updates, then 0.
    The share used falls by a fifth at the fourth update; the rate must not rise with it (it did,
    on a CI machine)."""
    from nmt.training.final_cost import FinalCost

    calls = []

    def shrinking_reserve(self):
        calls.append(None)
        return 1.2 if len(calls) <= 3 else 0.0

    monkeypatch.setattr(FinalCost, "reserve", shrinking_reserve)
    rates = rates_of_a_timed_run(tmp_path, cache_dir, minutes=0.1)
    assert len(rates) >= 6, rates
    assert all(later <= earlier for earlier, later in zip(rates, rates[1:])), rates
    # held, not frozen: once the wall clock passes the old estimate the rate falls again
    assert rates[-1] < rates[4], rates


def test_time_budget_keeps_its_highest_share_within_a_process():
    """`spent` follows the latest agreement (it ends the run); `highest_spent` never falls; a new
    process (a resumption, perhaps with a larger budget) starts its highest share afresh."""
    from nmt.training.budget import TimeBudget

    budget = TimeBudget(max_minutes=1.0)
    for share in (0.1, 0.4, 0.3, 0.35):
        budget.spent = share
    assert (budget.spent, budget.highest_spent) == (0.35, 0.4)
    budget.spent = 0.5
    assert budget.highest_spent == 0.5
    resumed = TimeBudget(max_minutes=2.0)
    resumed.load_state_dict({"wall_seconds": 30.0})
    resumed.spent = resumed.fraction(resumed.seconds_before)      # 30 s of 120
    assert resumed.highest_spent == pytest.approx(0.25)
