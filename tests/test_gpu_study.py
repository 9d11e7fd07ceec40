"""scripts/benchmarks/gpu_study.py: the confirmation's records copied in, the study stopped at its
minutes, and only the records the call finished packed for the way back."""

import json
import sys
import tarfile

import pytest

from scripts.benchmarks import gpu_study
from tests.helpers import run_cli


def finished(name: str, seed: int, bleu: float) -> dict:
    return {"name": name, "seed": seed, "status": "finished", "eval": {"bleu": bleu}}


def test_only_new_or_changed_finished_records_are_packed(tmp_path):
    folder = tmp_path / "confirmation"
    (folder / "records" / "bahdanau").mkdir(parents=True)
    (folder / "records" / "bahdanau" / "seed1.json").write_text(json.dumps(finished("bahdanau", 1, 36.9)))
    (folder / "study.json").write_text("{}")
    before = gpu_study.finished_records(folder)
    (folder / "records" / "bahdanau" / "seed2.json").write_text(json.dumps(finished("bahdanau", 2, 37.0)))
    (folder / "records" / "bahdanau" / "seed3.json").write_text(json.dumps({"status": "failed"}))
    (folder / "study.json").write_text(json.dumps({"sessions": [
        {"command": f"python -m nmt.study --out {gpu_study.ROOT}/benchmarks/x"},      # an earlier session: as it was
        {"command": f"python -m nmt_study --out {gpu_study.ROOT}/benchmarks/x --data-path {gpu_study.ROOT}/data/m"}]}))
    new = gpu_study.pack(folder, before, 1, tmp_path / "records.tgz")
    assert new == ["records/bahdanau/seed2.json"]
    with tarfile.open(tmp_path / "records.tgz") as tar:
        assert sorted(tar.getnames()) == ["records/bahdanau/seed2.json", "study.json"]
        commands = [s["command"] for s in json.load(tar.extractfile("study.json"))["sessions"]]
    assert commands == [f"python -m nmt.study --out {gpu_study.ROOT}/benchmarks/x",
                        "python -m nmt_study --out benchmarks/x --data-path data/m"]     # the call's own: relative


def test_the_study_is_stopped_at_its_minutes_and_what_it_finished_comes_back(tmp_path, monkeypatch):
    """A stand-in study writes one finished record, then would run for a minute: SIGTERM ends it
    at --minutes; the folder's earlier record is not packed, the new one is."""
    writer = ("import json, pathlib, sys, time, os; out = pathlib.Path(sys.argv[1]); "
              "(out / 'records' / 'cosine').mkdir(parents=True, exist_ok=True); "
              "(out / 'records' / 'cosine' / 'seed9.json').write_text(json.dumps("
              "{'status': 'finished', 'commit': os.environ['NMT_COMMIT']})); time.sleep(60)")
    monkeypatch.setattr(gpu_study, "study_command",
                        lambda args, out, work, machine: [sys.executable, "-c", writer, str(out)])
    folder = tmp_path / "confirmation"
    (folder / "records" / "bahdanau").mkdir(parents=True)
    (folder / "records" / "bahdanau" / "seed1.json").write_text(json.dumps(finished("bahdanau", 1, 36.9)))
    out = tmp_path / "out"
    code = gpu_study.main(["--commit", "abc1234", "--out", str(out), "--minutes", "0.05", "--device", "cpu",
                           "--folder", str(folder), "--work", str(tmp_path / "work")])
    summary = json.loads((out / "gpu_study.json").read_text())
    assert code == 0 and summary["exit"] != 0 and summary["seconds"] < 30       # stopped, not waited for
    assert summary["new_records"] == ["records/cosine/seed9.json"]
    with tarfile.open(out / "records.tgz") as tar:
        record = json.load(tar.extractfile("records/cosine/seed9.json"))
        assert record["commit"] == "abc1234" and "records/bahdanau/seed1.json" not in tar.getnames()


def test_the_study_command_trains_the_confirmation_on_the_device(tmp_path):
    args = gpu_study.parse_args(["--commit", "abc1234", "--out", str(tmp_path), "--jobs", "6",
                                 "--study-args", "--max-runs 2"])
    command = gpu_study.study_command(args, tmp_path / "confirmation", tmp_path, "H200")
    assert command[1:4] == ["-m", "nmt_study", "--confirm"]
    assert command[-1] == "trainer.device=cuda" and "--records-only" in command
    assert command[command.index("--jobs") + 1] == "6" and command[command.index("--machine") + 1] == "H200"
    assert command[command.index("--max-runs") + 1] == "2"
    assert "--git-commit" not in command                     # the device's copy has no git to commit to


@pytest.mark.parametrize("argv, said", [
    (["--commit", "HEAD"], "--commit HEAD: not a commit hash"),
    (["--commit", "abc1234", "--minutes", "0"], "--minutes must be above 0"),
    (["--commit", "abc1234", "--folder", "/nonexistent"], "no records/ folder in it"),
])
def test_bad_options_are_one_line_before_anything_runs(tmp_path, argv, said):
    done = run_cli("scripts.benchmarks.gpu_study", *argv, "--out", str(tmp_path / "out"), timeout=60)
    assert done.returncode == 2 and b"Traceback" not in done.stderr
    assert said in done.stderr.decode().strip().splitlines()[-1]
    assert not (tmp_path / "out").exists()
