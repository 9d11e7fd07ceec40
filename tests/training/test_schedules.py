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


def test_budget_decay_follows_the_minutes_when_they_end_the_run(tmp_path, cache_dir):
    """A 3-second budget and room for a million updates: the minutes decide, so the rate falls
    with each update and is near its floor when the time ends."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    train(tmp_path, "experiment=quickstart", "schedule=budget_decay", "schedule.warmup_steps=1",
          "optimizer.lr=0.002", "trainer.max_steps=1000000", "trainer.max_minutes=0.05",
          "trainer.val_every=1000000", "trainer.log_every=1", "trainer.val_max_sentences=10",
          "trainer.heatmap_sentences=0", cache_dir=cache_dir)
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    rates = [e.value for e in sorted(events.Scalars("train/lr"), key=lambda e: e.step)]
    assert len(rates) >= 4, rates                                  # a few updates in 3 seconds
    assert all(later < earlier for earlier, later in zip(rates, rates[1:])), rates
    assert rates[0] > 0.0015 and rates[-1] < 0.001, rates          # from near the peak to below half of it
