"""Inputs that are not what they claim (nmt/base/file_inputs.py, checkpoints.py).

- Every file input of every command is a regular file: a FIFO, a symlink to
  one or a character device is one line, never a read that waits or never
  ends (each call here has a deadline). /dev/null stands for the devices in
  what reads: /dev/zero would fill the memory of a version that reads it.
- A checkpoint whose weights hold NaN or infinity is refused, naming the weight.
- A damaged checkpoint's advice names other checkpoints that exist, and
  torch's pickle warnings do not print before nmt's line.
"""

import math
import os
import re
import shutil
import threading

import pytest
import torch

from nmt.data.readers import read_lines
from nmt.base.errors import NmtError
from nmt.base.file_inputs import special_kind
from nmt.store.checkpoints import load_checkpoint, save_checkpoint
from nmt.translator import Translator
from tests.helpers import run_cli

ONE_THREAD = {"OMP_NUM_THREADS": "1"}
SENTENCE = b"monday the twenty first of march nineteen eighty four\n"
DEADLINE = 60         # seconds; a read of a FIFO without a writer would wait forever


def within_deadline(call):
    """call() in a thread; fails (instead of hanging the suite) past DEADLINE."""
    result = {}

    def run():
        try:
            result["value"] = call()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            result["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE)
    assert not thread.is_alive(), f"still reading after {DEADLINE} s"
    if "error" in result:
        raise result["error"]
    return result["value"]


@pytest.fixture
def not_files(tmp_path):
    """name -> a path that exists but is no regular file."""
    fifo = tmp_path / "pipe.pt"
    os.mkfifo(fifo)
    link = tmp_path / "link.pt"
    link.symlink_to(fifo)
    yield {"fifo": fifo, "link_to_fifo": link, "dev_null": "/dev/null"}
    try:                                  # release a reader a failing run left waiting
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


KIND = {"fifo": "a FIFO (named pipe)", "link_to_fifo": "a FIFO (named pipe)", "dev_null": "a character device"}


@pytest.mark.parametrize("name", sorted(KIND))
def test_a_checkpoint_that_is_not_a_file_is_one_line(not_files, name):
    path = not_files[name]
    with pytest.raises(NmtError) as caught:
        within_deadline(lambda: load_checkpoint(path))
    assert str(caught.value) == (f"checkpoint {path} is {KIND[name]}, not a regular file; "
                                 "give the .pt file written by nmt.train")


@pytest.mark.parametrize("name", ["fifo", "dev_null"])
def test_a_text_file_that_is_not_a_file_is_one_line(not_files, name):
    path = not_files[name]
    with pytest.raises(NmtError, match=re.escape(f"is {KIND[name]}, not a regular file; expected a text file")):
        within_deadline(lambda: read_lines(path))


def test_special_kind_never_blocks(not_files, tmp_path):
    assert special_kind(not_files["fifo"]) == "a FIFO (named pipe)"
    assert special_kind("/dev/zero") == "a character device"
    assert special_kind(tmp_path) is None and special_kind(tmp_path / "absent") is None
    (tmp_path / "plain.txt").write_text("x\n")
    assert special_kind(tmp_path / "plain.txt") is None


def one_line(done) -> str:
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert "Traceback" not in stderr and "Warning" not in stderr, stderr
    (line,) = stderr.splitlines()
    assert line.startswith("nmt: error: "), stderr
    return line.removeprefix("nmt: error: ")


def test_every_command_refuses_a_fifo_or_a_device(tmp_path, toy_checkpoint, not_files):
    """The commands as a user runs them, each with a deadline (was: waiting forever)."""
    fifo, null = str(not_files["fifo"]), "/dev/null"
    ckpt = str(toy_checkpoint)
    sweep = tmp_path / "sweep" / "0"
    sweep.mkdir(parents=True)
    os.mkfifo(sweep / "summary.json")
    runs = [
        (("nmt.translate", "--checkpoint", fifo), f"checkpoint {fifo} is a FIFO"),
        (("nmt.translate", "--checkpoint", ckpt, "--input", null), "--input /dev/null is a character device"),
        (("nmt.translate", "--checkpoint", ckpt, "--reference", fifo), f"--reference {fifo} is a FIFO"),
        (("nmt.average", null, ckpt, "--output", str(tmp_path / "avg.pt")), "checkpoint /dev/null is a char"),
        (("nmt.explore", "--checkpoint", fifo, "--port", str(free_port())), f"checkpoint {fifo} is a FIFO"),
        (("nmt.explore", "--checkpoint", ckpt, "--compare", null, "--port", str(free_port())),
         "checkpoint /dev/null is a character device"),
        (("nmt.compare", str(tmp_path / "sweep")), f"{sweep / 'summary.json'} is a FIFO"),
    ]
    for args, start in runs:
        done = run_cli(*args, input=SENTENCE, env=ONE_THREAD, timeout=DEADLINE)
        assert one_line(done).startswith(start), args


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_training_refuses_data_and_resume_paths_that_are_not_files(tmp_path, not_files):
    fifo = str(not_files["fifo"])
    (tmp_path / "ok.txt").write_text("a b\nc d\n")
    ok = str(tmp_path / "ok.txt")
    base = ("experiment=quickstart", f"hydra.run.dir={tmp_path / 'run'}", f"cache_dir={tmp_path / 'cache'}")
    files = ("data=files", f"data.train_src={fifo}", f"data.train_tgt={ok}", f"data.valid_src={ok}",
             f"data.valid_tgt={ok}")
    done = run_cli("nmt.train", *base, *files, env=ONE_THREAD, timeout=DEADLINE)
    assert one_line(done) == (f"{fifo} is a FIFO (named pipe), not a regular file; expected a text file "
                              "with one sentence a line")
    done = run_cli("nmt.train", *base, "trainer.resume=/dev/zero", env=ONE_THREAD, timeout=DEADLINE)
    assert one_line(done) == ("trainer.resume=/dev/zero is a character device, not a regular file; give a "
                              "checkpoint file")


def test_standard_input_is_still_read_with_a_dash(toy_checkpoint):
    done = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--input", "-", input=SENTENCE,
                   env=ONE_THREAD, timeout=DEADLINE)
    assert done.returncode == 0, done.stderr.decode()
    assert len(done.stdout.decode().splitlines()) == 1


# -- weights that are not numbers ---------------------------------------------------

@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")], ids=["nan", "inf", "-inf"])
def test_weights_that_are_not_finite_are_refused(tmp_path, toy_checkpoint, bad):
    state = torch.load(toy_checkpoint, weights_only=True)
    name = max(state["model"])
    state["model"][name].view(-1)[0] = bad
    path = save_checkpoint(state, tmp_path / "diverged.pt")
    with pytest.raises(NmtError) as caught:
        Translator.from_checkpoint(path, device="cpu")
    what = "NaN" if math.isnan(bad) else "infinity"
    assert str(caught.value).startswith(f"checkpoint {path}: weight {name} holds {what} (1 of ")


def test_translate_refuses_a_nan_checkpoint_instead_of_empty_lines(tmp_path, toy_checkpoint):
    state = torch.load(toy_checkpoint, weights_only=True)
    for tensor in state["model"].values():
        if tensor.is_floating_point():
            tensor.fill_(float("nan"))
    path = save_checkpoint(state, tmp_path / "nan.pt")
    done = run_cli("nmt.translate", "--checkpoint", str(path), input=SENTENCE, env=ONE_THREAD)
    assert done.stdout == b""
    assert f"checkpoint {path}: weight " in one_line(done)


# -- a damaged last.pt ----------------------------------------------------------------

def test_a_damaged_last_pt_names_checkpoints_that_exist(tmp_path, toy_checkpoint):
    run = tmp_path / "checkpoints"
    run.mkdir()
    shutil.copy(toy_checkpoint, run / "best.pt")
    shutil.copy(toy_checkpoint, run / "step_60.pt")
    (run / "last.pt").write_bytes(toy_checkpoint.read_bytes()[:5000])
    done = run_cli("nmt.translate", "--checkpoint", str(run / "last.pt"), input=SENTENCE, env=ONE_THREAD)
    message = one_line(done)
    assert message.startswith(f"checkpoint {run / 'last.pt'} is truncated or not a checkpoint (")
    assert message.endswith(f"; use another checkpoint of the run: {run / 'best.pt'}, {run / 'step_60.pt'}")


def test_a_plain_pickle_gives_no_torch_warning_before_the_line(tmp_path):
    import pickle

    path = tmp_path / "last.pt"
    path.write_bytes(pickle.dumps({"model": 1}, protocol=4))     # torch warns about the protocol
    done = run_cli("nmt.translate", "--checkpoint", str(path), input=SENTENCE, env=ONE_THREAD)
    assert one_line(done) == (f"checkpoint {path} is truncated or not a checkpoint (UnpicklingError); "
                              "no other checkpoint is beside it; use a copy or train again")


def test_other_checkpoints_are_only_those_that_exist(tmp_path, toy_checkpoint):
    from nmt.store.checkpoints import other_checkpoints

    (tmp_path / "last.pt").write_bytes(b"x")
    assert other_checkpoints(tmp_path / "last.pt") == []
    shutil.copy(toy_checkpoint, tmp_path / "step_3.pt")
    shutil.copy(toy_checkpoint, tmp_path / "step_12.pt")
    os.mkfifo(tmp_path / "best.pt")
    assert other_checkpoints(tmp_path / "last.pt") == [tmp_path / "step_12.pt", tmp_path / "step_3.pt"]
    assert other_checkpoints(tmp_path / "step_12.pt") == [tmp_path / "last.pt", tmp_path / "step_3.pt"]


def test_a_folder_where_a_file_is_expected(tmp_path, capsys):
    from nmt.training.run_dir import find_resume_checkpoint
    from nmt.commands.translate import main as translate_main

    with pytest.raises(NmtError, match=r"^trainer.resume=\S+ is a directory; give the \.pt file inside it"):
        find_resume_checkpoint(str(tmp_path), tmp_path / "run")           # not "no such checkpoint file"
    for option in ("--input", "--reference"):
        assert translate_main(["--checkpoint", "x.pt", option, str(tmp_path)]) == 1
        assert capsys.readouterr().err.startswith(f"nmt: error: {option} {tmp_path} is a directory; give a text file")


def test_run_files_and_the_vocabulary_cache_that_are_fifos(tmp_path, toy_checkpoint, not_files):
    from nmt.store.averaging import run_scores
    from nmt.data.tokenizer import Tokenizer

    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "metrics.jsonl")
    with pytest.raises(NmtError, match=r"metrics.jsonl is a FIFO \(named pipe\), not a regular file"):
        within_deadline(lambda: run_scores(run, "bleu"))          # not "does not exist"
    cache = tmp_path / "cache"
    (cache / "spm").mkdir(parents=True)
    lines = ["a b c", "d e f"] * 20
    key = "fifo"
    os.mkfifo(cache / "spm" / f"{key}.joint.model")
    with pytest.raises(NmtError, match=r"^the vocabulary cache \S+ is a FIFO \(named pipe\), not a regular file"):
        within_deadline(lambda: Tokenizer._load_or_train(key, {"joint": lambda: lines}, 12, "unigram", True,
                                                         cache, 0))    # not writing into it, forever


def test_study_links_are_checked_before_any_training(tmp_path, not_files, capsys):
    from nmt_study.__main__ import main as study_main

    fifo, typo = not_files["fifo"], tmp_path / "typo.txt"
    for links, line in ((fifo, f"--links {fifo} is a FIFO (named pipe), not a regular file; give a text "
                               "file of word links"),
                        (typo, f"--links {typo}: no such file")):
        code = within_deadline(lambda: study_main(["--data-path", str(tmp_path), "--links", str(links),
                                                   "--out", str(tmp_path / "study")]))
        assert (code, capsys.readouterr().err) == (1, f"nmt: error: {line}\n")
        assert not (tmp_path / "study").exists()        # said before any folder or training
