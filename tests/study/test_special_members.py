"""A study's run folder whose member is a FIFO, a link loop or a folder where a file
belongs: that run fails in one line naming it, nothing is read (a FIFO would hang the
study), written or removed, and nmt.train is never started."""

import os

import pytest

from nmt.base.errors import NmtError
from nmt_study import runner
from nmt_study.configs import study_configs


@pytest.mark.parametrize("member", ["study_command.json", "study_trained.json", "study_failed.txt",
                                    "study_train.out", "summary.json", "metrics.jsonl", "checkpoints/last.pt"])
@pytest.mark.parametrize("kind", ["fifo", "loop", "folder"])
def test_a_study_run_folder_member_of_another_kind_fails_that_run_in_one_line(tmp_path, monkeypatch, member, kind):
    monkeypatch.setattr(runner, "run_watched", lambda *a, **k: pytest.fail("nmt.train was started"))
    run_dir = tmp_path / "luong_dot" / "seed1"
    (run_dir / "checkpoints").mkdir(parents=True)
    target = run_dir / member
    {"fifo": os.mkfifo, "loop": lambda p: os.symlink(p.name, p), "folder": os.mkdir}[kind](target)
    before = sorted((str(p), os.lstat(p).st_mtime_ns) for p in tmp_path.rglob("*"))
    config = next(c for c in study_configs("toy") if c.name == "luong_dot")
    with pytest.raises(NmtError) as refused:
        runner.train(config, 1, run_dir, ["data=toy"], timeout_s=60, commit="abc")
    said = {"fifo": "a FIFO (named pipe)", "loop": "a symbolic link loop (it leads back to itself)", "folder": "a folder"}
    assert f"{member} is {said[kind]}, not the regular file nmt writes" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert sorted((str(p), os.lstat(p).st_mtime_ns) for p in tmp_path.rglob("*")) == before
