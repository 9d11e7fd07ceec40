"""A run's folder and files belong to that run (nmt/base/run_files.py, run_dir.py).

- Any trace of a run (a checkpoint, metrics, a summary) makes a folder a
  run, not only checkpoints/last.pt: a new run into a finished run whose
  last.pt is gone, with or without trainer.resume=auto, changes no byte and
  names the checkpoint the run can continue from.
- No command writes over a run's own files unless told so
  (`nmt.average --output RUN/checkpoints/last.pt` needs --overwrite).
- Resuming from a checkpoint of weights only (an averaged one) says so before
  any data is read; trainer.resume_weights_only=true starts a new run from it.

Real `python -m nmt.train` processes on the toy task.
"""

import shutil

import pytest

from nmt.base.errors import NmtError
from nmt.base.run_files import check_not_run_file, holds_a_run, run_of
from tests.helpers import run_cli
from tests.test_run_folder import nmt_train, one_error, snapshot


@pytest.fixture(scope="module")
def finished(tmp_path_factory, cache_dir):
    """A finished toy run (4 steps, a step_N.pt kept), through the CLI."""
    run_dir = tmp_path_factory.mktemp("traces") / "run"
    done = nmt_train(run_dir, cache_dir, "trainer.keep_last=2")
    assert done.returncode == 0, done.stderr.decode()
    return run_dir


def copy_of(finished, tmp_path, *remove) -> "Path":  # noqa: F821
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    for name in remove:
        (run / name).unlink()
    return run


@pytest.mark.parametrize("resume", [None, "auto"], ids=["fresh", "resume_auto"])
def test_a_run_whose_last_pt_is_gone_is_still_a_run(finished, tmp_path, cache_dir, resume):
    run = copy_of(finished, tmp_path, "checkpoints/last.pt")
    before = snapshot(run)
    extra = [f"trainer.resume={resume}"] if resume else []
    message = one_error(nmt_train(run, cache_dir, "trainer.seed=5", *extra))
    step = run / "checkpoints" / "step_4.pt"
    assert message.startswith(f"{run} already holds a run (")
    assert "whose checkpoints/last.pt is gone, so trainer.resume=auto cannot continue it" in message
    assert message.endswith(f"continue it from step 4 with trainer.resume={step} (its optimiser state is "
                            "there), or choose another hydra.run.dir")
    assert snapshot(run) == before                 # best.pt, step_N.pt, metrics, summary: as they were


def test_metrics_and_summary_alone_make_a_run(finished, tmp_path, cache_dir):
    run = copy_of(finished, tmp_path)
    shutil.rmtree(run / "checkpoints")
    before = snapshot(run)
    message = one_error(nmt_train(run, cache_dir, "trainer.resume=auto"))
    assert message.startswith(f"{run} already holds a run (metrics.jsonl, summary.json) whose "
                              "checkpoints/last.pt is gone")
    assert message.endswith("none of its checkpoints holds optimiser state to continue from; train on "
                            "from one's weights with trainer.resume=PATH trainer.resume_weights_only=true "
                            "in another hydra.run.dir")
    assert snapshot(run) == before


def test_what_makes_a_folder_a_run(tmp_path):
    assert not holds_a_run(tmp_path)
    (tmp_path / "metrics.jsonl").write_text("")           # an empty log holds nothing to lose
    (tmp_path / "train.log").write_text("a refused start\n")
    (tmp_path / ".hydra").mkdir()
    assert not holds_a_run(tmp_path)
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "averaged.pt").write_bytes(b"weights")
    assert holds_a_run(tmp_path)
    assert run_of(tmp_path / "checkpoints" / "averaged.pt") == tmp_path.resolve()
    assert run_of(tmp_path / "metrics.jsonl") == tmp_path.resolve()
    assert run_of(tmp_path / "notes.txt") is None


def test_average_does_not_replace_a_runs_last_pt(finished, tmp_path):
    run = copy_of(finished, tmp_path)
    last = run / "checkpoints" / "last.pt"
    before = last.read_bytes()
    steps = sorted(str(p) for p in (run / "checkpoints").glob("step_*.pt"))
    done = run_cli("nmt.average", *steps, "--output", str(last))
    assert one_error(done) == (f"--output {last} belongs to the run in {run} (the checkpoint it continues "
                               "from); writing it would replace the run's own file; choose another file, "
                               "or add --overwrite to replace it")
    assert last.read_bytes() == before
    best = run / "checkpoints" / "best.pt"
    done = run_cli("nmt.average", *steps, "--output", str(best), "--overwrite")
    assert done.returncode == 0, done.stderr.decode()
    assert best.read_bytes() != before


def test_translate_does_not_write_over_a_runs_files(finished, tmp_path):
    run = copy_of(finished, tmp_path)
    for name in ("summary.json", "metrics.jsonl", ".hydra/config.yaml"):
        with pytest.raises(NmtError, match=f"belongs to the run in {run}; writing it would replace"):
            check_not_run_file("--output", run / name)
    check_not_run_file("--output", run / "translations.txt")          # a new file in the folder: fine
    summary = run / "summary.json"
    before = summary.read_bytes()
    done = run_cli("nmt.translate", "--checkpoint", str(run / "checkpoints" / "best.pt"), "--output",
                   str(summary), input=b"one two\n")
    assert one_error(done).startswith(f"--output {summary} belongs to the run in {run}")
    assert summary.read_bytes() == before


def test_resuming_from_weights_only_is_said_before_any_data(finished, tmp_path, cache_dir):
    averaged = tmp_path / "averaged.pt"
    steps = sorted(str(p) for p in (finished / "checkpoints").glob("step_*.pt"))
    assert run_cli("nmt.average", *steps, "--output", str(averaged)).returncode == 0
    fresh_cache = tmp_path / "cache"
    done = run_cli("nmt.train", "experiment=quickstart", f"cache_dir={fresh_cache}",
                   f"hydra.run.dir={tmp_path / 'next'}", f"trainer.resume={averaged}")
    assert one_error(done) == (
        f"cannot resume from {averaged}: it holds model weights only, without the optimiser state, "
        "schedule and progress a run continues from (an averaged checkpoint); resume from the run's "
        "last.pt or a step_N.pt, or start a new run from these weights with "
        "trainer.resume_weights_only=true and a new hydra.run.dir")
    assert not any(fresh_cache.rglob("*.model"))           # no data was read, no vocabulary trained
    assert not (tmp_path / "next").exists() or not any((tmp_path / "next").rglob("*.pt"))


def test_a_new_run_from_weights_only(finished, tmp_path, cache_dir):
    averaged = tmp_path / "averaged.pt"
    steps = sorted(str(p) for p in (finished / "checkpoints").glob("step_*.pt"))
    assert run_cli("nmt.average", *steps, "--output", str(averaged)).returncode == 0
    weights = ("trainer.resume_weights_only=true", f"trainer.resume={averaged}", "trainer.max_steps=2")
    done = nmt_train(tmp_path / "next", cache_dir, *weights)
    assert done.returncode == 0, done.stderr.decode()
    assert "started from the weights of" in (tmp_path / "next" / "train.log").read_text()
    before = snapshot(finished)                    # never into a run's folder: it is a new run
    message = one_error(nmt_train(finished, cache_dir, *weights))
    assert message.startswith(f"{finished / 'checkpoints'} already holds a run")
    assert snapshot(finished) == before
    message = one_error(nmt_train(tmp_path / "other", cache_dir, "trainer.resume_weights_only=true"))
    assert message == ("trainer.resume_weights_only=true starts a new run from the weights of a checkpoint; "
                       "name it with trainer.resume=PATH")


def test_resuming_another_runs_checkpoint_into_a_run_changes_nothing(finished, tmp_path, cache_dir):
    run = copy_of(finished, tmp_path)
    other = finished / "checkpoints" / "last.pt"
    before = snapshot(run)
    message = one_error(nmt_train(run, cache_dir, f"trainer.resume={other}", "trainer.max_steps=6"))
    assert message.startswith(f"hydra.run.dir={run} holds another run (")
    assert message.endswith(f"continuing {other} there would replace its files; choose a new hydra.run.dir, "
                            "or resume one of that run's own checkpoints")
    assert snapshot(run) == before                 # was: its best.pt, metrics and summary replaced
