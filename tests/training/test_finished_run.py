"""trainer.resume=auto on a run that finished trains nothing and changes no file when
what ended it still holds (nmt.training.resume_checks.finished_already): its step or
epoch limit, the time budget that ended it (spent, or not raised: the run stops a final
validation early, so its clock may stand short of the budget), or early stopping's
count. The whole command, files' bytes and times: tests/test_refused_start.py."""

import json

import pytest
from omegaconf import OmegaConf

from nmt.store.checkpoints import load_checkpoint, save_checkpoint
from nmt.training.resume_checks import finished_already


def finished_run(folder, toy_checkpoint, stopped_by, trained_minutes=None, **progress):
    """A run folder whose last.pt is the toy model's with `progress` and trainer.max_minutes
    `trained_minutes`, and whose summary.json says `stopped_by` ended it at that step."""
    state = load_checkpoint(toy_checkpoint)
    state["progress"].update(progress)
    state["config"]["trainer"]["max_minutes"] = trained_minutes
    (folder / "checkpoints").mkdir(parents=True)
    save_checkpoint(state, folder / "checkpoints" / "last.pt")
    (folder / "summary.json").write_text(json.dumps({"step": state["progress"]["step"], "stopped_by": stopped_by}))
    return folder / "checkpoints" / "last.pt"


def trainer(max_minutes=None, patience=0, max_steps=1000):
    return OmegaConf.create({"max_steps": max_steps, "max_epochs": 100, "max_minutes": max_minutes,
                             "patience": patience})


@pytest.mark.parametrize("stopped_by, trained, progress, now, expected", [
    ("trainer.max_minutes", 1.0, {"wall_seconds": 61.0}, trainer(1.0), "trainer.max_minutes=1"),
    ("trainer.max_minutes", 1.0, {"wall_seconds": 57.5}, trainer(1.0), "trainer.max_minutes=1"),   # short of it
    ("trainer.max_minutes", 1.0, {"wall_seconds": 61.0}, trainer(0.5), "trainer.max_minutes=0.5"),
    ("trainer.max_minutes", 1.0, {"wall_seconds": 57.5}, trainer(2.0), None),     # a larger budget trains on
    ("trainer.max_minutes", 1.0, {"wall_seconds": 61.0}, trainer(None), None),    # no budget: up to max_steps
    ("trainer.patience", None, {"bad_validations": 2}, trainer(patience=2), "trainer.patience=2"),
    ("trainer.patience", None, {"bad_validations": 2}, trainer(patience=3), None),
    ("trainer.patience", None, {"bad_validations": 2}, trainer(patience=0), None),  # early stopping off
    ("trainer.max_steps", None, {}, trainer(max_steps=60), "trainer.max_steps=60"),
    ("trainer.max_steps", None, {}, trainer(max_steps=61), None),
    ("stop signal", None, {"wall_seconds": 61.0, "bad_validations": 9}, trainer(1.0, 2), None),
])
def test_a_resume_trains_nothing_only_while_what_ended_the_run_holds(tmp_path, toy_checkpoint, stopped_by, trained,
                                                                     progress, now, expected):
    last = finished_run(tmp_path / "run", toy_checkpoint, stopped_by, trained, **progress)
    done = finished_already(last, tmp_path / "run", now)
    if expected is None:
        assert done is None
    else:
        assert done[1] == (f"nmt: the run in {tmp_path / 'run'} already finished at step 60 ({expected}); nothing "
                           f"to train, no file changed; raise {expected.split('=')[0]} to train on\n")


def test_a_summary_of_another_step_is_not_a_finished_run(tmp_path, toy_checkpoint):
    last = finished_run(tmp_path / "run", toy_checkpoint, "trainer.max_minutes", 1.0, wall_seconds=61.0)
    (tmp_path / "run" / "summary.json").write_text(json.dumps({"step": 59, "stopped_by": "trainer.max_minutes"}))
    assert finished_already(last, tmp_path / "run", trainer(1.0)) is None
