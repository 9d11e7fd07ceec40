"""Study records read strictly, the study's counts bounded, its trainers ended
with it (issue 58, items 4-6): a record that cannot be read or parsed, or whose
figures are not numbers, is named in one line and the report exits 1 (a
missing record is still "not run"); --seeds and --only-seeds are bounded and
parsed strictly; SIGKILL to a study ends its trainer."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from nmt_study.__main__ import main
from tests.helpers import ROOT
from tests.study.test_guard import TOY, one_error_line

FINISHED = {"status": "finished", "name": "luong_general", "seed": 1,
            "eval": {"test_bleu": 30.0, "final_step": 2, "wall_s": 10.0}}


def record_at(out):
    folder = out / "records" / "luong_general"
    folder.mkdir(parents=True)
    (out / "study.json").write_text(json.dumps({"data": "toy", "sessions": []}))
    return folder / "seed1.json"


def deep(n: int) -> str:
    return "[" * n + "]" * n


def with_eval(**figures) -> str:
    return json.dumps({**FINISHED, "eval": {**FINISHED["eval"], **figures}})


# how the record is made -> what its line says
BROKEN = {
    "a folder": (lambda p: p.mkdir(), "is a folder, not a record"),
    "a link loop": (lambda p: (p.symlink_to(p.parent / "other.json"),
                               (p.parent / "other.json").symlink_to(p)), "is a symbolic link loop"),
    "a dangling link": (lambda p: p.symlink_to(p.parent / "gone.json"), "is a link to nothing"),
    "non-UTF-8 bytes": (lambda p: p.write_bytes(b'{"status": "fin\xff\xfe"}'), "is not UTF-8 text (byte 16)"),
    "half-written JSON": (lambda p: p.write_text(json.dumps(FINISHED)[:40]), "is not whole JSON"),
    "100,000 nested brackets": (lambda p: p.write_text(deep(100_000)), "is nested too deeply"),
    "not an object": (lambda p: p.write_text("[1, 2]"), "not a JSON object"),
    "eval: {}": (lambda p: p.write_text(json.dumps({**FINISHED, "eval": {}})), "its figures (eval) are {}"),
    "a string for a number": (lambda p: p.write_text(with_eval(test_bleu="34.1")),
                              'eval.test_bleu is text "34.1", not a number'),
    "a list for a number": (lambda p: p.write_text(with_eval(final_step=[2])), "eval.final_step is a list"),
    "true for a number": (lambda p: p.write_text(with_eval(aer=True)), "eval.aer is true, not a number"),
    "no wall_s": (lambda p: p.write_text(json.dumps({**FINISHED, "eval": {"test_bleu": 1.0}})),
                  "eval.wall_s is missing"),
    "records a FIFO": (lambda p: (p.parent.rmdir(), os.mkfifo(p.parent)), "is a FIFO (named pipe)"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_record_is_one_line_and_the_report_fails(tmp_path, capsys, cache_dir, case):
    make, said = BROKEN[case]
    make(record_at(tmp_path / "out"))
    started = time.monotonic()
    assert main(["--report-only", *TOY, "--out", str(tmp_path / "out"), "--cache-dir", str(cache_dir)]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert said in line and "seed1.json" in line or case == "records a FIFO" and said in line, line
    assert time.monotonic() - started < 60                  # read, not waited on


def test_a_missing_record_is_still_not_run(tmp_path):
    from nmt_study.configs import study_configs
    from nmt_study.tables import collect

    record_at(tmp_path / "out")
    configs = [c for c in study_configs("toy") if c.name == "luong_general"]
    runs = collect(tmp_path / "out", configs, {"luong_general": [1, 2]})
    assert [(r["seed"], r["status"]) for r in runs] == [(1, "not run"), (2, "not run")]


def test_a_whole_record_is_read_as_before(tmp_path):
    from nmt_study.runner import read_record

    path = record_at(tmp_path / "out")
    path.write_text(with_eval(aer=None, steps_to_target=None, entropy=float("nan")))
    assert read_record(path)["eval"]["test_bleu"] == 30.0
    assert read_record(path.parent / "seed2.json") is None


@pytest.mark.parametrize("argv, said", [
    (["--seeds", "1000000"], "--seeds 1000000: at most 100 (each seed is one training run of every configuration)"),
    (["--jobs", "100000"], "--jobs 100000: at most 256"),
    (["--only-seeds", "1_0"], "--only-seeds 1_0: give seed numbers from 1, comma-separated"),
    (["--only-seeds", "7"], "--only-seeds 7: the plan has seeds 1 to 1 (--seeds, --spread)"),
    (["--only-seeds", "0"], "--only-seeds 0: give seed numbers from 1"),
    (["--only-seeds", ""], "--only-seeds : give seed numbers from 1"),           # was the whole plan
    (["study.only_seeds="], "--only-seeds : give seed numbers from 1"),
    (["--only", ""], "--only '': names no configuration; give some, e.g. luong_general"),   # was the whole plan
    (["--only", " , "], "--only ' , ': item 1 of 2 is empty (two commas in a row, or one at an end)"),
    # one rule for every comma list: an empty item is refused, never skipped (--only a,, trained a)
    (["--only", "luong_general,,"], "--only 'luong_general,,': item 2 of 3 is empty (two commas in a row, or one "
                                    "at an end); give configuration or family names"),
    (["--only-seeds", "1,,2"], "--only-seeds '1,,2': item 2 of 3 is empty (two commas in a row, or one at an end); "
                               "give seed numbers from 1"),
    (["--spread", ",luong_general"], "--spread ',luong_general': item 1 of 2 is empty"),
    (["--reproduce", "luong_general:1,"], "--reproduce 'luong_general:1,': item 2 of 2 is empty"),
    (["study.only="], "--only '': names no configuration"),
    (["study.seeds=1_0"], "study.seeds='1_0': not a whole number"),
    (["--seeds", "1_0"], "argument --seeds: '1_0' is not a whole number"),
])
def test_the_studys_counts_are_bounded_and_read_strictly(tmp_path, capsys, argv, said):
    started = time.monotonic()
    try:
        code = main([*TOY, *argv, "--max-runs", "1", "--out", str(tmp_path / "out"),
                     "--runs-dir", str(tmp_path / "runs")])
    except SystemExit as usage:                            # argparse's usage error: exit 2
        code = usage.code
    assert code in (1, 2)                                  # --only-seeds 1_0 was an empty plan, exit 0
    assert said in one_error_line(capsys.readouterr().err)
    assert time.monotonic() - started < 30                  # --seeds 1000000 hung
    assert not (tmp_path / "runs").exists()


def test_a_killed_study_leaves_no_trainer_running(tmp_path, cache_dir):
    runs = tmp_path / "runs"
    argv = TOY[:-1] + ["100000"]                                 # a budget it will not finish
    study = subprocess.Popen([sys.executable, "-m", "nmt_study", *argv, "--out", str(tmp_path / "out"),
                              "--runs-dir", str(runs), "--cache-dir", str(cache_dir)], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    metrics = runs / "luong_general" / "seed1" / "metrics.jsonl"
    deadline = time.monotonic() + 240
    while not (metrics.exists() and metrics.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.5)                                          # the child is training
    child = int((runs / "luong_general" / "seed1" / ".lock").read_text())
    study.send_signal(signal.SIGKILL)                            # the study cannot stop it itself
    study.wait(timeout=30)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            os.kill(child, 0)
            time.sleep(0.2)
        os.kill(child, signal.SIGKILL)
        pytest.fail("the trainer still runs 60 s after its study was killed")
    except ProcessLookupError:
        pass
    assert (runs / "luong_general" / "seed1" / "checkpoints" / "last.pt").exists()   # SIGTERM: it saved


def test_a_child_gets_its_signal_when_the_parent_dies_first(tmp_path):
    """die_with_parent (prctl PR_SET_PDEATHSIG) in the route the study starts every trainer by."""
    from nmt_study.child_death import die_with_parent

    if die_with_parent() is None:
        pytest.skip("not Linux")
    pid_file = tmp_path / "child.pid"
    child_code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    script = tmp_path / "parent.py"
    script.write_text("import os, sys\nfrom pathlib import Path\nfrom nmt_study.runner import run_watched\n"
                      f"run_watched([sys.executable, '-c', {child_code!r}], Path({str(tmp_path / 'log.txt')!r}), "
                      "dict(os.environ), None, 600)\n")
    parent = subprocess.Popen([sys.executable, str(script)], cwd=ROOT)
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int(pid_file.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)
    pytest.fail("the child outlived its killed parent")
