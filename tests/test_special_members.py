"""FIFOs, devices, symbolic link loops, folders and files where a run folder's member
belongs (issue 58, item 3): nmt.train (a new run and trainer.resume=auto) and
nmt.average --run name the member and what it is in one line, exit 1, write
nothing and never wait on a FIFO."""

import os
import shutil

import pytest

from tests.helpers import run_cli


def fifo(path):
    os.mkfifo(path)


def loop(path):
    os.symlink(path.name, path)


def folder(path):
    path.mkdir()


def device(path):
    os.symlink("/dev/zero", path)


def a_file(path):
    path.write_text("not a folder\n")


SAID = {fifo: "is a FIFO (named pipe), not", loop: "is a symbolic link loop (it leads back to itself), not",
        folder: "is a folder, not", device: "is a character device, not", a_file: "is a file, not"}
FILES = ["metrics.jsonl", "summary.json", "train.log", ".lock", ".hydra/overrides.yaml", "checkpoints/last.pt"]
FOLDERS = ["checkpoints", "tensorboard", ".hydra"]
CASES = [(m, k) for m in FILES for k in (fifo, loop, folder, device)] + \
        [(m, k) for m in FOLDERS for k in (fifo, loop, a_file)]


def snapshot(folder) -> dict:
    return {str(p.relative_to(folder)): (os.lstat(p).st_mode, os.lstat(p).st_mtime_ns) for p in folder.rglob("*")}


def one_line(done) -> str:
    err = done.stderr.decode()
    assert done.returncode == 1 and err.count("\n") == 1 and err.startswith("nmt: error: "), err[-2000:]
    return err


@pytest.mark.parametrize("resume", ["null", "auto"])
@pytest.mark.parametrize("member, make", CASES, ids=[f"{m}-{k.__name__}" for m, k in CASES])
def test_a_run_folder_member_of_another_kind_is_one_line_before_anything_is_written(tmp_path, member, make, resume):
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    target = run / member
    if target.is_dir():
        target.rmdir()
    target.parent.mkdir(parents=True, exist_ok=True)
    make(target)
    before = snapshot(tmp_path)
    done = run_cli("nmt.train", "experiment=quickstart", f"hydra.run.dir={run}", f"trainer.resume={resume}",
                   timeout=60)
    line = one_line(done)
    assert f"hydra.run.dir={run}: its {member} {SAID[make]}" in line, line
    assert snapshot(tmp_path) == before


AVERAGE_CASES = [("", k) for k in (fifo, loop, device, a_file)] + [("checkpoints", k) for k in (fifo, loop, a_file)] \
    + [(m, k) for m in ("metrics.jsonl", "summary.json") for k in (fifo, loop, folder, device)]


@pytest.mark.parametrize("member, make", AVERAGE_CASES, ids=[f"{m or 'RUN'}-{k.__name__}" for m, k in AVERAGE_CASES])
def test_average_run_names_a_member_of_another_kind(tmp_path, toy_checkpoint, member, make):
    run = tmp_path / "run"
    shutil.copytree(toy_checkpoint.parent.parent, run, ignore=shutil.ignore_patterns("tensorboard", "best.pt", "last.pt"))
    target = run / member if member else run
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    make(target)
    done = run_cli("nmt.average", "--run", str(run), "--best", "1", "--output", str(tmp_path / "avg.pt"), timeout=60)
    line = one_line(done)
    shown = f"--run {run}" if not member else str(target)
    assert f"{shown} {SAID[make]}" in line, line
    assert not (tmp_path / "avg.pt").exists()
