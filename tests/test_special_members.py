"""FIFOs, devices, sockets, symbolic link loops, folders and files where a member of a
folder nmt reads belongs (issue 58, items 3 and 6): nmt.train (a new run and
trainer.resume=auto) and nmt.average --run in a run folder, nmt.compare in a sweep's
run folders, nmt-data multi30k in --from and DEST, nmt.translate --plot-attention in
its picture folder name the member and what it is in one line, exit 1, write nothing
and never wait on a FIFO (each command as a user runs it, with a timeout)."""

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


# -- the other commands that read a folder: nmt.compare, nmt.data, --plot-attention ---------------

TIMEOUT = 120     # seconds: a hang fails; a loaded machine's slow start does not


def socket_file(path):
    import socket

    here = os.getcwd()
    os.chdir(path.parent)                # a short relative name: AF_UNIX paths are at most 107 bytes
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(path.name)
    finally:
        os.chdir(here)


def dangling(path):
    os.symlink("nowhere", path)


SAID.update({socket_file: "is a socket, not", dangling: "is a dangling symbolic link, not"})
KINDS = (fifo, loop, device, socket_file, folder, dangling)
COMPARE_CASES = [(m, k) for m in ("summary.json", "metrics.jsonl", ".hydra/overrides.yaml") for k in KINDS] + \
    [(".hydra", k) for k in (fifo, loop, device, a_file)]


@pytest.mark.parametrize("member, make", COMPARE_CASES, ids=[f"{m}-{k.__name__}" for m, k in COMPARE_CASES])
def test_compare_names_a_run_member_of_another_kind(tmp_path, member, make):
    """Was: a FIFO metrics.jsonl, or a link loop as summary.json, passed over with exit 0 (another
    table, or a run left out); a FIFO summary.json was the one kind said."""
    from tests.test_compare import make_run

    make_run(tmp_path / "sweep", "0", "bahdanau", [(100, 10.0)])
    make_run(tmp_path / "sweep", "1", "luong_dot", [(100, 12.0)])
    target = tmp_path / "sweep" / "1" / member
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    make(target)
    before = snapshot(tmp_path)
    done = run_cli("nmt.compare", str(tmp_path / "sweep"), "--csv", str(tmp_path / "table.csv"), timeout=TIMEOUT)
    assert f"{target} {SAID[make]}" in one_line(done) and done.stdout == b""
    assert snapshot(tmp_path) == before                       # no table written


@pytest.mark.parametrize("make", (fifo, loop, device, a_file), ids=lambda k: k.__name__)
def test_compare_names_a_sweep_folder_of_another_kind(tmp_path, make):
    make(tmp_path / "sweep")
    done = run_cli("nmt.compare", str(tmp_path / "sweep"), timeout=TIMEOUT)
    assert one_line(done) == (f"nmt: error: {tmp_path / 'sweep'} {SAID[make]} a folder; give the sweep folder "
                              "printed by --multirun\n")


DATA_CASES = [(side, k) for side in ("--from", "DEST") for k in KINDS]


@pytest.mark.parametrize("side, make", DATA_CASES, ids=[f"{s}-{k.__name__}" for s, k in DATA_CASES])
def test_nmt_data_names_a_file_of_another_kind_in_from_or_dest(tmp_path, side, make):
    """nmt-data multi30k DEST --from DIR: a FIFO in DIR made the copy wait forever; one in
    DEST was "another checksum", and with --overwrite a folder there was a traceback."""
    source, dest = tmp_path / "mirror", tmp_path / "dest"
    source.mkdir()
    dest.mkdir()
    target = (source if side == "--from" else dest) / "val.de.gz"
    make(target)
    before = snapshot(tmp_path)
    done = run_cli("nmt.data", "multi30k", str(dest), "--from", str(source), "--languages", "de", "--overwrite",
                   timeout=TIMEOUT)
    line = one_line(done)
    shown = f"--from {target}" if side == "--from" else str(target)
    assert f"{shown} {SAID[make]} a regular file; " in line, line
    assert line.endswith("nothing was written\n" if side == "--from" else "move it away or choose another DEST\n")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("make", (fifo, loop, device, folder), ids=lambda k: k.__name__)
def test_plot_attention_names_a_picture_of_another_kind(tmp_path, toy_checkpoint, make):
    """A FIFO named 00001.png in the --plot-attention folder made the drawing wait forever,
    with --overwrite too."""
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    make(pictures / "00001.png")
    before = snapshot(tmp_path)
    done = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--plot-attention", str(pictures),
                   "--overwrite", input=b"the first of may\n", timeout=TIMEOUT)
    assert one_line(done) == (f"nmt: error: --plot-attention {pictures}: its 00001.png {SAID[make]} a picture "
                              "file; move it away or choose another folder\n")
    assert done.stdout == b"" and snapshot(tmp_path) == before


READ_CASES = [(k, r) for k in (loop, dangling, fifo, folder) for r in ("read_lines", "count_lines", "alignments")]


@pytest.mark.parametrize("make, reader", READ_CASES, ids=[f"{r}-{k.__name__}" for k, r in READ_CASES])
def test_a_data_file_of_another_kind_is_said_as_such(tmp_path, make, reader):
    """Was: a link loop or a dangling link was "no such file"."""
    from nmt.data.alignments import read_alignment_file
    from nmt.data.readers import count_lines, read_lines
    from nmt.base.errors import NmtError

    path = tmp_path / "train.de"
    make(path)
    call = {"read_lines": read_lines, "count_lines": count_lines, "alignments": read_alignment_file}[reader]
    with pytest.raises(NmtError) as caught:
        call(path)
    said = "is a directory" if make is folder else SAID[make] + " a regular file"
    assert str(caught.value).startswith(f"{path} {said}; expected a text file with one sentence a line")


@pytest.mark.parametrize("make", (fifo, loop, device, folder), ids=lambda k: k.__name__)
def test_a_multi30k_folder_member_of_another_kind_is_one_line(tmp_path, make):
    """data.path: was "has no val.en or val.en.gz" with a FIFO or a folder of that name there."""
    from nmt.data.corpora import load_multi30k
    from nmt.base.errors import NmtError

    for name in ("train.de", "train.en", "val.de"):
        (tmp_path / name).write_text("a b\n")
    make(tmp_path / "val.en")
    with pytest.raises(NmtError) as caught:
        load_multi30k("de", "en", tmp_path)
    assert str(caught.value) == f"data.path={tmp_path}: its val.en {SAID[make]} a regular file; move it away"


def test_training_names_a_data_folder_member_or_a_data_file_of_another_kind(tmp_path):
    """nmt.train as a user runs it: a FIFO in data.path, a link loop as data.train_src."""
    data = tmp_path / "multi30k"
    data.mkdir()
    os.mkfifo(data / "train.de")
    (tmp_path / "ok.txt").write_text("a b\nc d\n")
    ok = tmp_path / "ok.txt"
    loop(tmp_path / "loop.txt")
    base = ("experiment=quickstart", f"cache_dir={tmp_path / 'cache'}")
    for args, said in (
            (("data=multi30k", f"data.path={data}", f"hydra.run.dir={tmp_path / 'run1'}"),
             f"data.path={data}: its train.de {SAID[fifo]} a regular file; move it away"),
            (("data=files", f"data.train_src={tmp_path / 'loop.txt'}", f"data.train_tgt={ok}",
              f"data.valid_src={ok}", f"data.valid_tgt={ok}", f"hydra.run.dir={tmp_path / 'run2'}"),
             f"{tmp_path / 'loop.txt'} {SAID[loop]} a regular file; expected a text file with one sentence a line")):
        done = run_cli("nmt.train", *base, *args, env={"OMP_NUM_THREADS": "1"}, timeout=TIMEOUT * 2)
        assert one_line(done) == f"nmt: error: {said}\n"
