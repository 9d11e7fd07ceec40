"""A study harms nothing it did not make (issue 46): numbers checked before any run, one error
line for bad folders and records, no folder removed, a lock against a second study, its child
stopped with it, and failed runs counted in its exit status."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from nmt_study.__main__ import main
from nmt_study.guard import StudyLock
from nmt_study.runner import TRAINED, make_room
from tests.helpers import ROOT, run_cli

TOY = ["--data", "toy", "--seeds", "1", "--only", "luong_general", "--test-sentences", "5",
       "--val-sentences", "5", "--val-every", "2", "--budget-steps", "2"]


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nmt: error: "), err
    return lines[0]


@pytest.mark.parametrize("option, value, said", [
    ("--budget-steps", "0", "--budget-steps 0: must be at least 1"),
    ("--budget-minutes", "0", "--budget-minutes 0: must be more than 0"),
    ("--test-sentences", "-1", "--test-sentences -1: must be at least 1"),
    ("--val-every", "0", "--val-every 0: must be at least 1"),
    ("--patience", "-1", "--patience -1: must be at least 0"),
    ("--beam-size", "0", "--beam-size 0: must be at least 1"),
    ("--val-sentences", "0", "--val-sentences 0: must be at least 1"),
    ("--target-bleu", "100.5", "--target-bleu 100.5: BLEU is between 0 and 100"),
    ("--target-bleu", "-1", "--target-bleu -1: BLEU is between 0 and 100"),
    ("--threads", "0", "--threads 0: must be at least 1"),
    ("--threads", "-1", "--threads -1: must be at least 1"),
    ("--jobs", "0", "--jobs 0: must be at least 1"),
    ("--transformer-budget-steps", "0", "--transformer-budget-steps 0: must be at least 1"),
    ("study.budget_steps=0", None, "--budget-steps 0: must be at least 1"),
])
def test_every_number_is_checked_before_any_run(tmp_path, capsys, option, value, said):
    argv = TOY[:-2] if option.startswith(("--budget", "study.")) else TOY       # TOY ends in its budget
    argv = [*argv, option, *([value] if value is not None else []), "--out", str(tmp_path / "out"),
            "--runs-dir", str(tmp_path / "runs")]
    assert main(argv) == 1
    assert one_error_line(capsys.readouterr().err).startswith(f"nmt: error: {said}")
    assert not (tmp_path / "out").exists() and not (tmp_path / "runs").exists()     # nothing made


@pytest.mark.parametrize("option", ["--out", "--runs-dir"])
def test_a_file_where_a_folder_belongs_is_one_line(tmp_path, capsys, cache_dir, option):
    mine = tmp_path / "notes.txt"
    mine.write_text("mine\n")
    other = "--runs-dir" if option == "--out" else "--out"
    assert main([*TOY, option, str(mine), other, str(tmp_path / "other"), "--cache-dir", str(cache_dir)]) == 1
    assert option in one_error_line(capsys.readouterr().err)
    assert mine.read_text() == "mine\n"


def finished_study(out):
    """An --out folder whose one record is finished but has no figures."""
    folder = out / "records" / "luong_general"
    folder.mkdir(parents=True)
    (out / "study.json").write_text(json.dumps({"data": "toy", "sessions": []}))
    return folder / "seed1.json"


def test_a_finished_record_without_figures_is_one_line(tmp_path, capsys, cache_dir):
    record = finished_study(tmp_path / "out")
    record.write_text(json.dumps({"status": "finished", "eval": None, "name": "luong_general", "seed": 1}))
    assert main(["--report-only", "--data", "toy", "--out", str(tmp_path / "out"), "--cache-dir",
                 str(cache_dir), "--test-sentences", "5"]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert "seed1.json" in line and "eval" in line and "null" in line


def test_a_record_that_is_a_fifo_is_one_line_not_a_hang(tmp_path, cache_dir):
    record = finished_study(tmp_path / "out")
    os.mkfifo(record)
    result = run_cli("nmt_study", "--report-only", "--data", "toy", "--out", str(tmp_path / "out"),
                     "--cache-dir", str(cache_dir), "--test-sentences", "5", timeout=120)
    assert result.returncode == 1
    assert "FIFO" in one_error_line(result.stderr.decode())


def test_a_folder_the_study_did_not_make_is_never_removed(tmp_path, cache_dir):
    """The user's own run where the study would train: that run fails, untouched; the study
    says how many failed and exits non-zero."""
    theirs = tmp_path / "runs" / "luong_general" / "seed1"
    theirs.mkdir(parents=True)
    (theirs / "notes.txt").write_text("mine\n")
    result = run_cli("nmt_study", *TOY, "--out", str(tmp_path / "out"), "--runs-dir", str(tmp_path / "runs"),
                     "--cache-dir", str(cache_dir), timeout=240)
    assert result.returncode == 1
    assert one_error_line(result.stderr.decode()).startswith("nmt: error: 1 of 1 runs failed")
    assert sorted(p.name for p in theirs.iterdir()) == ["notes.txt"]
    assert (theirs / "notes.txt").read_text() == "mine\n"
    record = json.loads((tmp_path / "out" / "records" / "luong_general" / "seed1.json").read_text())
    assert record["status"] == "failed" and "not made by nmt_study" in record["reason"]


def test_an_unfinished_run_of_an_earlier_study_is_moved_aside_not_removed(tmp_path):
    run_dir = tmp_path / "bahdanau" / "seed1"
    run_dir.mkdir(parents=True)
    (run_dir / TRAINED).write_text("{}\n")
    (run_dir / "last.pt").write_bytes(b"weights")
    make_room(run_dir)
    assert not run_dir.exists()
    assert (tmp_path / "bahdanau" / "seed1.previous1" / "last.pt").read_bytes() == b"weights"
    run_dir.mkdir()
    (run_dir / TRAINED).write_text("{}\n")
    make_room(run_dir)
    assert (tmp_path / "bahdanau" / "seed1.previous2" / TRAINED).exists()


@pytest.mark.parametrize("locked", ["runs", "out"])
def test_a_second_study_on_the_same_folders_refuses(tmp_path, cache_dir, locked):
    with StudyLock({"--runs-dir": tmp_path / "runs", "--out": tmp_path / "out"}):
        other = {"runs": ("--out", tmp_path / "out2"), "out": ("--runs-dir", tmp_path / "runs2")}[locked]
        mine = {"runs": ("--runs-dir", tmp_path / "runs"), "out": ("--out", tmp_path / "out")}[locked]
        result = run_cli("nmt_study", *TOY, mine[0], str(mine[1]), other[0], str(other[1]),
                         "--cache-dir", str(cache_dir), timeout=240)
    assert result.returncode == 1
    assert "another nmt_study is training into it" in one_error_line(result.stderr.decode())
    assert not (tmp_path / "runs" / "luong_general").exists() and not (tmp_path / "runs2" / "luong_general").exists()


def test_stopping_the_study_stops_its_training_child(tmp_path, cache_dir):
    runs = tmp_path / "runs"
    argv = TOY[:-1] + ["100000"]                                 # a budget it will not finish, validating every 2
    study = subprocess.Popen([sys.executable, "-m", "nmt_study", *argv, "--out", str(tmp_path / "out"),
                              "--runs-dir", str(runs), "--cache-dir", str(cache_dir)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    metrics = runs / "luong_general" / "seed1" / "metrics.jsonl"
    deadline = time.monotonic() + 240
    while not (metrics.exists() and metrics.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.5)                                          # the child is training: it validated once
    lock = runs / "luong_general" / "seed1" / ".lock"
    child = int(lock.read_text())
    study.send_signal(signal.SIGTERM)
    _, err = study.communicate(timeout=120)
    assert study.returncode == 143 and err.decode().strip().startswith("nmt: stopped by SIGTERM")
    with pytest.raises(ProcessLookupError):                      # gone, not an orphan still training
        os.kill(child, 0)
    assert (runs / "luong_general" / "seed1" / "checkpoints" / "last.pt").exists()   # it stopped cleanly
