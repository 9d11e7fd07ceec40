"""A refused run writes nothing anywhere (issue 58, item 1; issue 63, point 6):
no folder left by a rejected nmt.train, a refused sweep leaves the old sweep's
multirun.yaml as it was, torchrun's environment is checked before anything is
written, a full disk at the start is one line with nothing half-written, a
finished run releases its lock file, and a resume with nothing to train
changes no file."""

import errno
import json
import os
import socket

import pytest

from nmt.base.errors import NmtError
from nmt.training import refused_start
from nmt.training.torchrun_env import torchrun_ranks
from tests.helpers import run_cli

TINY = ("experiment=quickstart", "trainer.max_steps=3", "trainer.val_every=3", "trainer.val_max_sentences=5",
        "trainer.heatmap_sentences=0")


def one_line(done) -> str:
    err = done.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("nmt: error: ") and "Traceback" not in err, err
    return err


def state(folder) -> dict:
    """Every file and folder under `folder`: its bytes, inode and modification time."""
    found = {}
    for path in sorted(folder.rglob("*")):
        info = path.stat()
        found[str(path.relative_to(folder))] = (path.read_bytes() if path.is_file() else None, info.st_ino,
                                                info.st_mtime_ns)
    return found


@pytest.mark.parametrize("environ, expected", [
    ({}, (0, 1, 0)),
    ({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "h", "MASTER_PORT": "29500"}, (1, 2, 1)),
])
def test_torchruns_environment_is_read(environ, expected):
    assert torchrun_ranks(environ) == expected


@pytest.mark.parametrize("environ, message", [
    ({"RANK": "abc"}, "RANK='abc' in the environment is not a whole number"),
    ({"RANK": "-1"}, "RANK='-1' in the environment is not a whole number"),
    ({"WORLD_SIZE": "2**63"}, "WORLD_SIZE='2**63' in the environment is not a whole number"),
    ({"LOCAL_RANK": "٣"}, "LOCAL_RANK='٣' in the environment is not a whole number"),
    ({"RANK": "1"}, "RANK=1 in the environment but WORLD_SIZE is not set"),
    ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "RANK=2 in the environment but WORLD_SIZE=2"),
    ({"WORLD_SIZE": "0"}, "WORLD_SIZE=0 in the environment: a group has 1 process or more"),
    ({"LOCAL_RANK": "1"}, "LOCAL_RANK=1 in the environment but WORLD_SIZE=1"),
    ({"WORLD_SIZE": "2", "RANK": "0"}, "WORLD_SIZE=2 in the environment but MASTER_ADDR, MASTER_PORT not set"),
    ({"WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "WORLD_SIZE=2 in the environment but RANK not set"),
    ({"WORLD_SIZE": "2", "RANK": "0", "MASTER_ADDR": "h", "MASTER_PORT": "70000"}, "MASTER_PORT='70000'"),
])
def test_a_bad_torchrun_environment_is_one_line(environ, message):
    with pytest.raises(NmtError, match="^" + message.replace("*", r"\*").replace("(", r"\(")):
        torchrun_ranks(environ)


def test_a_group_whose_second_rank_never_comes_is_one_line(monkeypatch):
    """WORLD_SIZE=2 without a second rank: Hydra's partial traceback of DistStoreError before."""
    import torch

    from nmt.training.distributed import Distributed

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for name, value in (("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0"), ("MASTER_ADDR", "127.0.0.1"),
                        ("MASTER_PORT", str(port))):
        monkeypatch.setenv(name, value)
    with pytest.raises(NmtError, match="rank 0 of WORLD_SIZE=2 could not form the process group at 127.0.0.1:"):
        Distributed.start(torch.device("cpu"), peer_timeout_s=1)


def test_a_full_disk_at_the_lock_is_one_line_and_leaves_no_lock_file(tmp_path, monkeypatch):
    from nmt.training import run_dir

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(run_dir, "write_all", full)
    folder = tmp_path / "run"
    with pytest.raises(NmtError, match=f"cannot write {folder / '.lock'}: No space left on device"):
        with run_dir.RunDirLock(folder, fresh=True):
            pass
    assert list(folder.iterdir()) == []                  # no 0-byte .lock


def test_a_finished_lock_is_released_and_its_file_removed(tmp_path):
    from nmt.training.run_dir import RunDirLock

    with RunDirLock(tmp_path, fresh=True):
        with RunDirLock(tmp_path):                        # re-entrant: the file stays while held
            pass
        assert (tmp_path / ".lock").read_text() == str(os.getpid())
    assert not (tmp_path / ".lock").exists()
    with RunDirLock(tmp_path, fresh=True):                # and the folder can be locked again
        pass


def test_a_full_disk_under_the_study_json_leaves_the_old_one(tmp_path, monkeypatch):
    from nmt.base import atomic
    from nmt_study.runner import write_settings

    write_settings(tmp_path / "old", {"sessions": [1]})
    before = (tmp_path / "old" / "study.json").read_bytes()
    real = atomic.write_all

    def full(fd, data):
        real(fd, bytes(data)[:3])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic, "write_all", full)
    for folder in (tmp_path / "old", tmp_path / "new"):
        with pytest.raises(NmtError, match=f"cannot write {folder / 'study.json'}: No space left on device"):
            write_settings(folder, {"sessions": [1, 2]})
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["old", "study.json"]
    assert (tmp_path / "old" / "study.json").read_bytes() == before


def test_a_sweep_that_ran_keeps_both_records(tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("old\n")
    refused_start.keep_sweep_record(sweep)
    (sweep / "multirun.yaml").write_text("new\n")            # what Hydra writes next
    (sweep / "0" / ".hydra").mkdir(parents=True)
    (sweep / "0" / ".hydra" / "hydra.yaml").write_text("a job took its folder\n")
    refused_start.finish()
    assert (sweep / "multirun.yaml").read_text() == "new\n"
    assert (sweep / "multirun.previous.yaml").read_text() == "old\n"


@pytest.mark.parametrize("mistake", [("trainer.metric=nonsense",), ("data.path=nowhere",),
                                     ("trainer.resume=missing.pt",), ("hydra.run.dir=a/b/c", "trainer.metric=x"),
                                     ("--multirun", "trainer.metric=x,y"), ("RANK=abc",), ("RANK=1",)])
def test_a_refused_run_leaves_no_folder(tmp_path, mistake):
    env = dict(m.split("=", 1) for m in mistake if m.startswith("RANK="))
    args = [m for m in mistake if not m.startswith("RANK=")]
    args.sort(key=lambda a: not a.startswith("-"))         # Hydra's flags before the overrides
    done = run_cli("nmt.train", *args[:1], "experiment=quickstart", *args[1:], cwd=tmp_path, env=env)
    assert done.returncode == 1
    if "--multirun" not in args:                          # a sweep prints one line for each job
        one_line(done)
    assert list(tmp_path.iterdir()) == []                 # outputs/DATE/TIME, multirun/... removed again


def test_a_refused_run_keeps_a_folder_it_did_not_make(tmp_path):
    (tmp_path / "mine").mkdir()
    done = run_cli("nmt.train", "experiment=quickstart", "trainer.metric=x", f"hydra.run.dir={tmp_path / 'mine'}",
                   cwd=tmp_path)
    assert done.returncode == 1 and (tmp_path / "mine").is_dir()


@pytest.fixture(scope="module")
def finished(tmp_path_factory, cache_dir):
    run = tmp_path_factory.mktemp("finished") / "run"
    done = run_cli("nmt.train", *TINY, f"cache_dir={cache_dir}", f"hydra.run.dir={run}")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return run, cache_dir


def test_a_finished_run_has_no_lock_file(finished):
    run, _ = finished
    assert (run / "summary.json").is_file() and not (run / ".lock").exists()


def test_a_resume_with_nothing_to_train_changes_no_file(finished):
    run, cache_dir = finished
    before = state(run)
    done = run_cli("nmt.train", *TINY, f"cache_dir={cache_dir}", f"hydra.run.dir={run}", "trainer.resume=auto")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert f"nmt: the run in {run} already finished at step 3 (trainer.max_steps=3)" in done.stdout.decode()
    assert state(run) == before                           # summary.json's wall_s included


BUDGET = ("experiment=quickstart", "trainer.max_steps=100000", "trainer.max_minutes=0.03", "trainer.val_every=100000",
          "trainer.val_max_sentences=5", "trainer.heatmap_sentences=0", "trainer.test_max_sentences=5")


def test_a_resume_of_a_run_whose_time_budget_is_spent_changes_no_file(tmp_path, cache_dir):
    """trainer.max_minutes ended it: continuing with the same budget trains nothing; before,
    the final validation ran again and summary.json (its wall_s), last.pt and best.pt were rewritten."""
    run = tmp_path / "run"
    done = run_cli("nmt.train", *BUDGET, f"cache_dir={cache_dir}", f"hydra.run.dir={run}")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["stopped_by"] == "trainer.max_minutes"
    before = state(run)
    again = run_cli("nmt.train", *BUDGET, f"cache_dir={cache_dir}", f"hydra.run.dir={run}", "trainer.resume=auto")
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    assert again.stdout.decode() == (f"nmt: the run in {run} already finished at step {summary['step']} "
                                     "(trainer.max_minutes=0.03); nothing to train, no file changed; raise "
                                     "trainer.max_minutes to train on\n")
    assert state(run) == before                           # every file's bytes, inode and time
    longer = [*BUDGET[:2], "trainer.max_minutes=0.06", *BUDGET[3:]]
    more = run_cli("nmt.train", *longer, f"cache_dir={cache_dir}", f"hydra.run.dir={run}", "trainer.resume=auto")
    assert more.returncode == 0, more.stderr.decode()[-2000:]
    assert json.loads((run / "summary.json").read_text())["step"] > summary["step"]   # a larger budget trains on


def test_rank_1_without_torchrun_changes_no_file_of_a_finished_run(finished):
    run, cache_dir = finished
    before = state(run)
    done = run_cli("nmt.train", *TINY, f"cache_dir={cache_dir}", f"hydra.run.dir={run}", "trainer.resume=auto",
                   env={"RANK": "1"})
    assert "RANK=1 in the environment but WORLD_SIZE is not set" in one_line(done)
    assert state(run) == before                           # train.log and .lock included


def test_a_refused_sweep_leaves_the_old_sweeps_record(tmp_path, cache_dir):
    sweep = tmp_path / "sweep"
    (sweep / "0" / "checkpoints").mkdir(parents=True)
    (sweep / "0" / "checkpoints" / "last.pt").write_bytes(b"the old sweep's run")
    (sweep / "multirun.yaml").write_text("hydra:\n  the: old sweep's record\n")
    before = state(sweep)
    done = run_cli("nmt.train", "--multirun", "experiment=quickstart", "model/attention=bahdanau",
                   f"cache_dir={cache_dir}", f"hydra.sweep.dir={sweep}")
    assert done.returncode == 1 and "checkpoints already holds a run" in done.stderr.decode()
    assert state(sweep) == before                         # the same file, bytes and times: nothing written


def test_a_full_disk_under_the_hydra_record_leaves_no_folder(tmp_path, monkeypatch, cache_dir):
    """The lock written, then .hydra/hydra.yaml cannot be: nothing of the run is left
    (before: .hydra/config.yaml, train.log with the error, the run folder)."""
    from nmt.commands.train import fit
    from nmt.training import run_dir

    real = run_dir.atomic_write

    def full_at_hydra_yaml(path, data, *args, **kwargs):
        if path.name == "hydra.yaml":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(path, data, *args, **kwargs)

    monkeypatch.setattr(run_dir, "atomic_write", full_at_hydra_yaml)
    run = tmp_path / "outputs" / "run"
    with pytest.raises(NmtError, match=f"cannot write {run / '.hydra'}: No space left on device"):
        fit([*TINY, f"cache_dir={cache_dir}"], run_dir=run)
    assert list(tmp_path.iterdir()) == []
