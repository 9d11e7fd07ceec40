"""--git-commit: each finished run's record committed alone, as it lands."""

import json
import subprocess

import pytest

from nmt.base.errors import NmtError
from nmt_study.autocommit import commit_record, work_tree_of
from nmt_study.configs import study_configs
from tests.study.git_repos import git, new_repo


@pytest.fixture
def repo(tmp_path):
    new_repo(tmp_path)
    (tmp_path / "notes.txt").write_text("the user's own work\n")
    git(tmp_path, "add", "notes.txt")                       # staged by the user, not to be committed
    return tmp_path


def test_a_finished_record_is_committed_alone(repo):
    from nmt_study.__main__ import save_record

    out = repo / "benchmarks" / "study" / "multi30k"
    out.mkdir(parents=True)
    (out / "study.json").write_text(json.dumps({"data": "multi30k"}))
    config = next(c for c in study_configs("multi30k") if c.name == "cosine")
    record = {"name": "cosine", "status": "finished", "eval": {"test_bleu": 33.5, "aer": 0.321}}
    save_record(out, config, 2, record, 1, 1, git_commit=True)

    assert git(repo, "log", "--format=%s").strip() == "study (multi30k): cosine seed 2, test BLEU 33.50, AER 0.321"
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == [
        "benchmarks/study/multi30k/records/cosine/seed2.json", "benchmarks/study/multi30k/study.json"]
    # the user's staged file is still staged, still not committed
    assert git(repo, "diff", "--cached", "--name-only").split() == ["notes.txt"]

    # a failed run is recorded on disk but not committed
    failed = {"name": "cosine", "status": "failed", "reason": "trainer exited 1"}
    save_record(out, config, 3, failed, 1, 1, git_commit=True)
    assert (out / "records" / "cosine" / "seed3.json").exists()
    assert len(git(repo, "log", "--format=%h").split()) == 1


def test_a_refused_commit_is_said_and_does_not_stop_the_study(repo):
    out = repo / "study"
    out.mkdir()
    record = out / "records" / "cosine" / "seed1.json"
    record.parent.mkdir(parents=True)
    record.write_text("{}")
    (repo / ".gitignore").write_text("records/\n")            # git refuses to add an ignored path
    said = commit_record(out, record, "study (study): cosine seed 1")
    assert said.startswith("not committed: ") and "ignored" in said and "\n" not in said
    assert subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True).returncode != 0


def test_an_output_folder_outside_git_is_one_error_before_training(tmp_path):
    with pytest.raises(NmtError, match="not inside a git work tree"):
        work_tree_of(tmp_path / "plain" / "toy")


def test_the_cli_says_it_in_one_line(tmp_path, cache_dir):
    from tests.helpers import run_cli

    result = run_cli("nmt_study", "--data", "toy", "--git-commit", "--only", "luong_dot",
                     "--out", str(tmp_path / "out"), "--runs-dir", str(tmp_path / "runs"),
                     "--cache-dir", str(cache_dir), timeout=120)
    assert result.returncode == 1
    error = result.stderr.decode().strip()
    assert error.startswith("nmt: error: --git-commit:") and "\n" not in error
    assert not (tmp_path / "runs").exists()              # nothing trained


def test_no_git_or_no_repository_is_a_line_not_a_stop(tmp_path, monkeypatch):
    record = tmp_path / "records" / "cosine" / "seed1.json"
    record.parent.mkdir(parents=True)
    record.write_text("{}")
    # the repository is gone since the study began: said, not raised
    said = commit_record(tmp_path, record, "m")
    assert said.startswith("not committed: --git-commit:") and "\n" not in said
    # no git executable at all: one clear error before training
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(NmtError, match=r"not inside a git work tree \(git: No such file"):
        work_tree_of(tmp_path)
