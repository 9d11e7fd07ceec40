"""What goes wrong for real: damaged checkpoints, arbitrary text, signals
during a run, two runs on one folder. Each failure is one line that names the
problem and what to do, and nothing already written is lost.

Bad training files and configs through `python -m nmt.train` are in
test_train_cli.py; NaN losses, a full disk and SIGKILL during a checkpoint
write in tests/training/.
"""

import io
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nmt.data.readers import read_lines
from nmt.base.errors import NmtError
from nmt.store.checkpoints import load_checkpoint, save_checkpoint
from nmt.training.run_command import continue_command
from nmt.commands.translate import main as translate_main
from nmt.commands.translate import read_input
from nmt.translator import Translator
from tests.helpers import ROOT, one_thread, run_cli  # noqa: F401 - one_thread: a fixture

pytestmark = pytest.mark.usefixtures("one_thread")

SENTENCE = "monday the twenty first of march nineteen eighty four"
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


def error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("nmt: error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


# -- checkpoints through nmt.translate ------------------------------------------

def test_truncated_checkpoint(tmp_path, toy_checkpoint):
    path = tmp_path / "best.pt"
    path.write_bytes(toy_checkpoint.read_bytes()[: toy_checkpoint.stat().st_size // 2])
    done = run_cli("nmt.translate", "--checkpoint", str(path), input=SENTENCE.encode(), env=ONE_THREAD)
    assert done.returncode == 1 and done.stdout == b""
    line = error_line(done.stderr.decode())
    assert line.startswith(f"nmt: error: checkpoint {path} is truncated or not a checkpoint (")
    assert line.endswith("); no other checkpoint is beside it; use a copy or train again")


def edited(tmp_path, toy_checkpoint, edit):
    """The toy checkpoint, changed by `edit(state)`, written as nmt writes checkpoints."""
    state = torch.load(toy_checkpoint, weights_only=True)
    edit(state)
    return save_checkpoint(state, tmp_path / "edited.pt")


def weights_do_not_fit(state):
    state["config"]["model"]["decoder"]["hidden_size"] = 32      # the weights are 128 wide


def no_sentencepiece(state):
    state["tokenizer"] = {}


def damaged_sentencepiece(state):
    state["tokenizer"] = {"src": b"\x08\x01garbage", "tgt": b"\x08\x01garbage"}


@pytest.mark.parametrize("edit, message", [
    (weights_do_not_fit, "its model weights do not fit its config (Error(s) in loading state_dict"),
    (no_sentencepiece, "holds no sentencepiece model; it cannot translate"),
    (damaged_sentencepiece, "the source sentencepiece model is damaged"),
], ids=lambda value: getattr(value, "__name__", ""))
def test_checkpoint_that_cannot_translate(tmp_path, toy_checkpoint, capsys, edit, message):
    path = edited(tmp_path, toy_checkpoint, edit)
    source = tmp_path / "in.txt"
    source.write_text(SENTENCE + "\n")
    assert translate_main(["--checkpoint", str(path), "--input", str(source)]) == 1
    assert message in error_line(capsys.readouterr().err)


def test_not_a_checkpoint(tmp_path, capsys):
    path = tmp_path / "notes.pt"
    path.write_text("my notes, not a model\n")
    source = tmp_path / "in.txt"
    source.write_text(SENTENCE + "\n")
    assert translate_main(["--checkpoint", str(path), "--input", str(source)]) == 1
    assert "is truncated or not a checkpoint" in error_line(capsys.readouterr().err)


def test_a_checkpoint_cannot_run_code_through_its_config(tmp_path, toy_checkpoint, capsys):
    """weights_only stops pickled code; a `_target_` naming os.system must be stopped too."""
    marker = tmp_path / "pwned"
    path = edited(tmp_path, toy_checkpoint, lambda state: state["config"]["model"].update(
        positional={"_target_": "os.system", "_args_": [f"touch {marker}"]}))
    source = tmp_path / "in.txt"
    source.write_text(SENTENCE + "\n")
    assert translate_main(["--checkpoint", str(path), "--input", str(source)]) == 1
    assert "names 'os.system' at model.positional, which is not one of nmt's model/positional options" in \
        error_line(capsys.readouterr().err)
    assert not marker.exists()


# -- arbitrary text: no crash, one line out per line in ------------------------------

def expected_lines(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def first_bad_line(data: bytes) -> int | None:
    for number, line in enumerate(data.split(b"\n"), 1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return number
    return None


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=60) | st.text(max_size=40).map(lambda t: t.encode("utf-8")))
def test_readers_on_any_bytes(tmp_path_factory, data):
    """File and stdin: the lines, or one NmtError naming the first bad line."""
    path = tmp_path_factory.getbasetemp() / "any.txt"
    path.write_bytes(data)
    bad = first_bad_line(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        if bad is None:
            assert len(read_lines(path)) == len(read_input(None)) == expected_lines(data)
        else:
            with pytest.raises(NmtError, match=f"line {bad}: invalid UTF-8"):
                read_lines(path)
            with pytest.raises(NmtError, match=f"<stdin> line {bad}: invalid UTF-8"):
                read_input(None)


@pytest.fixture(scope="module")
def translator(toy_checkpoint):
    return Translator.from_checkpoint(toy_checkpoint, device="cpu")


any_line = st.text(st.characters(exclude_characters="\n", exclude_categories=("Cs",)), max_size=25)


@settings(max_examples=30, deadline=None)
@given(text=any_line)
def test_tokenizer_round_trip_on_any_unicode(translator, text):
    tok = translator.tokenizer
    ids = tok.encode_src(text)
    assert all(0 <= i < tok.src_vocab_size for i in ids)
    assert len(tok.src_pieces(ids)) == len(ids)
    decoded = tok.decode_tgt(tok.encode_tgt(text))
    assert isinstance(decoded, str) and "\n" not in decoded
    # what the toy vocabulary covers comes back unchanged (it has no "k", for one)
    covered = set("".join(tok.tgt_pieces(range(4, tok.tgt_vocab_size)))) - {"\u2581"}
    if all(ch in covered or ch == " " for ch in text):
        assert decoded == " ".join(text.split())


@settings(max_examples=10, deadline=None)
@given(lines=st.lists(any_line, max_size=4), beam=st.sampled_from([1, 2]))
def test_translator_on_any_unicode(translator, lines, beam):
    outs = translator.translate(lines, beam_size=beam, batch_size=3)
    assert len(outs) == len(lines)
    for line, out in zip(lines, outs):
        assert "\n" not in out.text
        if not line.strip():
            assert out.text == ""
        else:
            assert out.attention.shape == (len(out.tgt_pieces), len(out.src_pieces))


@settings(max_examples=5, deadline=None)
@given(lines=st.lists(any_line, min_size=1, max_size=4))
def test_translate_cli_on_any_unicode(tmp_path_factory, toy_checkpoint, lines):
    folder = tmp_path_factory.getbasetemp()
    source, output = folder / "any.src", folder / "any.out"
    source.write_bytes("".join(line + "\n" for line in lines).encode("utf-8"))
    assert translate_main(["--checkpoint", str(toy_checkpoint), "--input", str(source),
                           "--output", str(output), "--beam-size", "1"]) == 0
    out = output.read_bytes().decode("utf-8").split("\n")
    assert len(out) == len(read_lines(source)) + 1 and out[-1] == ""
    for line, translated in zip(read_lines(source), out):
        if not line.strip():
            assert translated == ""        # (a model may also answer a real line with nothing)


# -- faults during a run ------------------------------------------------------------

def start_training(run_dir, cache_dir, log, *overrides):
    """A real `python -m nmt.train` on the toy task with far more steps than it will run."""
    with open(log, "wb") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "nmt.train", "experiment=quickstart", "trainer.max_steps=100000",
             "trainer.val_every=100000", "trainer.val_max_sentences=5", "trainer.heatmap_sentences=0",
             "trainer.keep_last=0", f"cache_dir={cache_dir}", f"hydra.run.dir={run_dir}", *overrides],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr,
            env=dict(os.environ, PYTHONUNBUFFERED="1", **ONE_THREAD))


def logged_steps(run_dir) -> int:
    """The plain lines of training steps in train.log (step 1, then every trainer.log_every)."""
    path = run_dir / "train.log"
    return len(re.findall(r"\] - step \d+ epoch", path.read_text())) if path.exists() else 0


def wait_for_training(child, log, run_dir, timeout=120):
    """Until train.log has a training step's line more than it had: the trainer then
    handles SIGINT and SIGTERM. With its output piped there is no progress bar."""
    before, deadline = logged_steps(run_dir), time.time() + timeout
    while logged_steps(run_dir) <= before:
        assert child.poll() is None, log.read_text()
        assert time.time() < deadline, "training did not start"
        time.sleep(0.1)
    assert b"train:" not in log.read_bytes()             # no bar's redraws in a log file


def stop(child, signum, log):
    """The exit code, stdout and the `nmt: stopped` line (on stderr)."""
    child.send_signal(signum)
    stdout, _ = child.communicate(timeout=120)
    (line,) = [line for line in log.read_text().splitlines() if line.startswith("nmt: stopped")]
    return child.returncode, stdout.decode(), line


def test_signals_write_a_checkpoint_and_resume_continues(tmp_path, cache_dir):
    run_dir, log = tmp_path / "run", tmp_path / "stderr.txt"
    last = run_dir / "checkpoints" / "last.pt"

    # SIGTERM (a scheduler stopping the job): checkpoint, exit 143, one line naming it
    child = start_training(run_dir, cache_dir, log)
    wait_for_training(child, log, run_dir)
    code, stdout, line = stop(child, signal.SIGTERM, log)
    assert code == 143, log.read_text()
    first = load_checkpoint(last)["progress"]["step"]
    assert first >= 1
    assert line == (f"nmt: stopped by SIGTERM at step {first}; checkpoint {last}; continue with: "
                    f"{continue_command(run_dir)}")
    assert " experiment=quickstart trainer.max_steps=100000 " in line
    assert "Traceback" not in log.read_text()

    # the command it printed continues the run
    child = start_training(run_dir, cache_dir, log, "trainer.resume=auto")
    wait_for_training(child, log, run_dir)

    # meanwhile a second run on the same folder refuses at once and changes nothing
    second = run_cli("nmt.train", "experiment=quickstart", f"cache_dir={cache_dir}",
                     f"hydra.run.dir={run_dir}", env=ONE_THREAD)
    assert second.returncode == 1
    assert error_line(second.stderr.decode()) == (
        f"nmt: error: another run is using {run_dir}; wait for it or choose another hydra.run.dir")
    assert load_checkpoint(last)["progress"]["step"] == first

    # SIGINT (Ctrl-C): checkpoint, exit 130, one line naming it
    code, stdout, line = stop(child, signal.SIGINT, log)
    assert code == 130, log.read_text()
    assert f"resumed from {last} at step {first}" in stdout
    step = load_checkpoint(last)["progress"]["step"]
    assert step > first
    assert line == f"nmt: stopped by SIGINT at step {step}; checkpoint {last}; continue with: {continue_command(run_dir)}"
    assert line.endswith(" trainer.resume=auto hydra.run.dir=" + str(run_dir))
    assert "Traceback" not in log.read_text()
