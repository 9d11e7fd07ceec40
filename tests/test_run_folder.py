"""A run folder belongs to one run (nmt/training/run_dir.py).

- A refused run (folder busy, folder already holds a run, path is a file)
  changes no byte in that folder: not .hydra/, not train.log, not .lock.
- trainer.resume=auto continues the folder's own last.pt or starts fresh,
  never another folder's.
- Resuming checks the checkpoint's data and tokenizer fingerprint; a
  mismatch is one line, trainer.resume_force=true continues anyway.
- After a SIGKILL and a resume, metrics.jsonl holds each step once.

Real `python -m nmt.train` processes on the toy task.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from nmt.store.checkpoints import load_checkpoint
from nmt.training.run_dir import drop_metrics_after, find_resume_checkpoint
from tests.helpers import ROOT, run_cli

ONE_THREAD = {"OMP_NUM_THREADS": "1"}
SHORT = ("experiment=quickstart", "trainer.max_steps=4", "trainer.val_every=2", "trainer.log_every=1",
         "trainer.val_max_sentences=5", "trainer.heatmap_sentences=0", "trainer.keep_last=1")


def nmt_train(run_dir, cache_dir, *overrides):
    return run_cli("nmt.train", *SHORT, f"cache_dir={cache_dir}", f"hydra.run.dir={run_dir}", *overrides,
                   env=ONE_THREAD)


def snapshot(folder) -> dict:
    """path -> bytes of every file under `folder`, hidden ones included."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def one_error(done) -> str:
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert "Traceback" not in stderr, stderr
    assert stderr.count("nmt: error: ") == 1, stderr
    (line,) = [line for line in stderr.splitlines() if line.startswith("nmt: error: ")]
    return line.removeprefix("nmt: error: ")


@pytest.fixture(scope="module")
def finished(tmp_path_factory, cache_dir):
    """A finished toy run (4 steps) through the CLI."""
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    done = nmt_train(run_dir, cache_dir, "trainer.seed=1")
    assert done.returncode == 0, done.stderr.decode()
    return run_dir


def test_the_run_writes_its_hydra_record(finished):
    # nmt.train writes .hydra/ itself, once it holds the folder (Hydra's own is off)
    overrides = (finished / ".hydra" / "overrides.yaml").read_text()
    assert "trainer.seed=1" in overrides and "trainer.max_steps=4" in overrides
    assert "max_steps: 4" in (finished / ".hydra" / "config.yaml").read_text()
    assert "run:" in (finished / ".hydra" / "hydra.yaml").read_text()


def test_a_second_run_into_a_finished_folder_changes_nothing(finished, cache_dir):
    before = snapshot(finished)
    done = nmt_train(finished, cache_dir, "trainer.seed=2")
    assert one_error(done) == (f"{finished / 'checkpoints'} already holds a run; continue it with "
                               "trainer.resume=auto or choose another hydra.run.dir")
    assert snapshot(finished) == before


def test_a_run_into_a_busy_folder_changes_nothing(finished, cache_dir):
    # this test process holds the folder's lock, as a live run does
    from nmt.training.run_dir import RunDirLock

    with RunDirLock(finished):
        before = snapshot(finished)
        done = nmt_train(finished, cache_dir, "trainer.seed=3", "trainer.resume=auto")
        assert one_error(done) == (f"another run is using {finished}; wait for it or choose another "
                                   "hydra.run.dir")
        assert snapshot(finished) == before


def test_a_config_error_in_a_run_folder_changes_nothing(finished, cache_dir):
    before = snapshot(finished)
    done = nmt_train(finished, cache_dir, "trainer.resume=auto", "trainer.grad_clip=-1")
    assert one_error(done) == "trainer.grad_clip=-1: must be >= 0 (0 turns clipping off)"
    assert snapshot(finished) == before            # not even the error in train.log


@pytest.mark.parametrize("inside", [False, True], ids=["file", "inside_a_file"])
def test_a_run_folder_that_is_a_file(tmp_path, cache_dir, inside):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"my notes\n")
    run_dir = path / "run" if inside else path
    message = one_error(nmt_train(run_dir, cache_dir))
    where = f"is inside {path}, which is a file" if inside else "is a file"
    assert message == f"hydra.run.dir={run_dir} {where}, not a folder; choose another hydra.run.dir"
    assert path.read_bytes() == b"my notes\n" and sorted(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize("key", ["hydra.run.dir", "cache_dir", "hydra.sweep.dir"])
def test_a_folder_that_cannot_be_made_is_one_line(tmp_path, key):
    # /proc takes no new folders (root included): one line before the data is read, never
    # Hydra's or the tokenizer cache's FileNotFoundError traceback
    where = {"hydra.run.dir": str(tmp_path / "run"), "cache_dir": str(tmp_path / "cache"),
             key: "/proc/nmt_cannot_be_made/x"}
    sweep = ["--multirun"] if key == "hydra.sweep.dir" else []
    done = run_cli("nmt.train", *sweep, *SHORT, *(f"{k}={v}" for k, v in where.items()), env=ONE_THREAD)
    assert one_error(done) == (f"{key}=/proc/nmt_cannot_be_made/x: cannot create the folder (No such "
                               f"file or directory); choose another {key}")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


# -- trainer.resume=auto -----------------------------------------------------------

def test_resume_auto_never_takes_another_folders_checkpoint(tmp_path):
    other = tmp_path / "outputs" / "2026-01-01" / "10-00-00" / "checkpoints" / "last.pt"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"another run, maybe other data")
    run_dir = tmp_path / "outputs" / "2026-01-01" / "11-00-00"
    assert find_resume_checkpoint("auto", run_dir) is None       # fresh, not the neighbour's
    own = run_dir / "checkpoints" / "last.pt"
    own.parent.mkdir(parents=True)
    own.write_bytes(b"")
    assert find_resume_checkpoint("auto", run_dir) == own
    assert find_resume_checkpoint(None, run_dir) is None


def test_a_missing_resume_checkpoint_is_refused_before_any_data(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    message = one_error(nmt_train(tmp_path / "run", cache, f"trainer.resume={tmp_path / 'nope.pt'}"))
    assert message == f"trainer.resume={tmp_path / 'nope.pt'}: no such checkpoint file; {tmp_path} holds no .pt file"
    assert list(cache.iterdir()) == []


# -- the data fingerprint ------------------------------------------------------------

def test_resume_with_other_data_is_one_line_and_force_continues(tmp_path, cache_dir, finished):
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(finished, run_dir)
    last = run_dir / "checkpoints" / "last.pt"
    tokenizer = load_checkpoint(last)["fingerprint"]["tokenizer"][:12]
    before = snapshot(run_dir)
    done = nmt_train(run_dir, cache_dir, "trainer.resume=auto", "data.max_len=31")
    assert snapshot(run_dir) == before        # refused before the data and before .hydra/
    # the refusal names what differs from the run's own command (tests/test_newcomer_frictions.py)
    # and what differs, checkpoint against config, first; forcing is offered (other data can be forced)
    message = one_error(done)
    assert message.startswith(f"cannot resume from {last}: it was trained on other data"), (message, tokenizer)
    assert "; this command lacks trainer.seed=1; adds data.max_len=31" in message, message
    assert message.endswith("or set trainer.resume_force=true to continue anyway with this command's data"), message

    # forced: the finished run (step 4 of 4) trains on to step 6; step 4 is validated once, not twice
    # (with trainer.max_steps=4 there is nothing to train: tests/test_refused_start.py)
    done = nmt_train(run_dir, cache_dir, "trainer.resume=auto", "data.max_len=31", "trainer.resume_force=true",
                     "trainer.max_steps=6")
    assert done.returncode == 0, done.stderr.decode()
    assert f"resumed from {last} at step 4" in (run_dir / "train.log").read_text()
    steps = [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps == [2, 4, 6]
    assert json.loads((run_dir / "summary.json").read_text())["step"] == 6


# -- the model ----------------------------------------------------------------------

def test_resume_with_another_model_changes_nothing_and_names_the_settings(tmp_path, cache_dir, finished):
    # refused before the data is read, .hydra/ and train.log untouched, never with
    # 'Error(s) in loading state_dict for Seq2Seq:'
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(finished, run_dir)
    last = run_dir / "checkpoints" / "last.pt"
    before = snapshot(run_dir)
    done = nmt_train(run_dir, cache_dir, "trainer.resume=auto", "model.decoder.hidden_size=64",
                     "model.decoder.dropout=0.3")
    assert snapshot(run_dir) == before
    message = one_error(done)
    assert message.startswith(f"cannot resume from {last}: it was trained with another model (checkpoint: "
                              "model.decoder.hidden_size=128; this config: model.decoder.hidden_size=64"), message
    assert ("; this command lacks trainer.seed=1; adds model.decoder.hidden_size=64; adds "
            "model.decoder.dropout=0.3") in message, message
    assert "resume_force" not in message          # another model's weights cannot be forced to fit


def test_resume_with_other_settings_of_the_same_shapes_continues(tmp_path, cache_dir, finished):
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(finished, run_dir)
    done = nmt_train(run_dir, cache_dir, "trainer.resume=auto", "trainer.max_steps=6",
                     "model.decoder.dropout=0.3")
    assert done.returncode == 0, done.stderr.decode()
    assert "resumed from" in (run_dir / "train.log").read_text()


# -- metrics.jsonl after a kill --------------------------------------------------------

def test_drop_metrics_after(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 2, "bleu": 1}\n{"step": 4, "bleu": 2}\n{"step": 6, "bleu": 3}\n{"step": 8, "bl')
    assert drop_metrics_after(path, 4) == {"step": 4, "bleu": 2}     # 6 and the cut line go
    assert path.read_text() == '{"step": 2, "bleu": 1}\n{"step": 4, "bleu": 2}\n'
    assert drop_metrics_after(path, 3) is None
    assert drop_metrics_after(path, 0) is None and path.read_text() == ""


def test_sigkill_then_resume_writes_each_step_once(tmp_path, cache_dir):
    run_dir, log = tmp_path / "run", tmp_path / "stderr.txt"
    metrics = run_dir / "metrics.jsonl"
    # validation every 3 steps; killed as soon as the second record is written,
    # before (or while) that validation's last.pt is saved
    args = [sys.executable, "-m", "nmt.train", "experiment=quickstart", "trainer.max_steps=100000",
            "trainer.val_every=3", "trainer.val_max_sentences=5", "trainer.heatmap_sentences=1",
            "trainer.keep_last=0", f"cache_dir={cache_dir}", f"hydra.run.dir={run_dir}"]
    with open(log, "wb") as stderr:
        child = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr,
                                 env=dict(os.environ, PYTHONUNBUFFERED="1", **ONE_THREAD))
    deadline = time.time() + 180
    try:
        while not (metrics.exists() and metrics.read_text().count("\n") >= 2):
            assert child.poll() is None, log.read_text()
            assert time.time() < deadline, "no second validation"
            time.sleep(0.002)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    recorded = [json.loads(line)["step"] for line in metrics.read_text().splitlines()]
    saved = load_checkpoint(run_dir / "checkpoints" / "last.pt")["progress"]["step"]
    # the kill came after step 6's record and before its last.pt: a resume from step 3 redoes 4-6
    assert recorded[:2] == [3, 6] and saved == 3, (recorded, saved)

    done = nmt_train(run_dir, cache_dir, "trainer.resume=auto", "trainer.max_steps=9",
                     "trainer.val_every=3", "trainer.heatmap_sentences=1")
    assert done.returncode == 0, done.stderr.decode()
    assert f"resumed from {run_dir / 'checkpoints' / 'last.pt'} at step {saved}" in (
        run_dir / "train.log").read_text()
    steps = [json.loads(line)["step"] for line in metrics.read_text().splitlines()]
    assert steps == [3, 6, 9]

