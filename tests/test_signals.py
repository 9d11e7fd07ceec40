"""Ctrl-C (SIGINT) and SIGTERM at any moment of `python -m nmt.train` and
`python -m nmt.translate`: exit 130 or 143, exactly one line on stderr, no
traceback, and nothing half-written.

Each run is a real process interrupted at one moment: many fixed delays after
nmt's first line installed its handlers (imports of Hydra and torch, Hydra's
composition, data preparation, the model build), and moments found from the
run's own output (the model built, the first update, a validation with its
checkpoint writes). The delays count from when the child catches SIGTERM,
which /proc/PID/status shows: before that Python itself is still starting
(its first hundredths of a second), and no program can answer a signal there.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from nmt.store.checkpoints import load_checkpoint
from nmt.training.run_command import continue_command
from tests.helpers import ROOT

ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
TRAIN = ("experiment=quickstart", "trainer.max_steps=100000", "trainer.val_every=6",
         "trainer.val_max_sentences=4", "trainer.heatmap_sentences=1", "trainer.keep_last=1",
         "trainer.log_every=5")
STARTUP = "before training started; no checkpoint was written"


class Child:
    """A running `python -m MODULE`, its output read as it comes."""

    def __init__(self, module: str, *args: str, stdin=subprocess.DEVNULL):
        self.process = subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, env=ENV,
                                        stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out, self.err = bytearray(), bytearray()
        self.readers = [threading.Thread(target=self._read, args=(pipe, buffer), daemon=True)
                        for pipe, buffer in ((self.process.stdout, self.out), (self.process.stderr, self.err))]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(pipe, buffer):
        for chunk in iter(lambda: pipe.read1(65536), b""):
            buffer.extend(chunk)

    def wait_for(self, ready, timeout=90.0):
        """Until `ready()` is true; fails if the process ended first."""
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.process.poll() is None, self.stderr
            assert time.monotonic() < deadline, f"timed out waiting; stderr: {self.stderr}"
            time.sleep(0.005)

    def handles_sigterm(self) -> bool:
        """nmt's handlers are installed: SigCgt in /proc/PID/status has SIGTERM's bit."""
        try:
            with open(f"/proc/{self.process.pid}/status") as status:
                caught = next(line for line in status if line.startswith("SigCgt:"))
        except (OSError, StopIteration):
            return False
        return bool(int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1)

    def stop(self, signum):
        self.process.send_signal(signum)
        code = self.process.wait(timeout=90)
        for reader in self.readers:
            reader.join(timeout=10)
        return code

    @property
    def stdout(self) -> str:
        return self.out.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self.err.decode("utf-8", "replace")


def stderr_lines(text: str) -> list[str]:
    """stderr's lines (split on \\r too: a progress bar's redraws would show as lines of their own;
    with the output piped there is none)."""
    return [line for line in re.split(r"[\r\n]", text) if line.strip()]


def one_stop_line(child: Child, code: int, signum) -> str:
    expected = 128 + signum
    assert code == expected, f"exit {code}, not {expected}; stderr: {child.stderr}"
    for text in (child.stdout, child.stderr):
        assert "Traceback" not in text and "Exception ignored" not in text, text
    lines = stderr_lines(child.stderr)
    assert len(lines) == 1, child.stderr
    assert lines[0].startswith(f"nmt: stopped by {signal.Signals(signum).name}"), lines
    return lines[0]


def no_partial_files(folder):
    """No temporary file of an atomic write is left behind."""
    left = [str(p) for p in folder.rglob("*") if p.name.endswith(".tmp")]
    assert not left, left


def train(run_dir, cache_dir) -> Child:
    return Child("nmt.train", *TRAIN, f"cache_dir={cache_dir}", f"hydra.run.dir={run_dir}")


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    """The toy task's sentencepiece model, trained once so that every run
    below reaches its data, model and training phases at the same pace."""
    cache = tmp_path_factory.mktemp("signals_cache")
    child = train(tmp_path_factory.mktemp("warm") / "run", cache)
    child.wait_for(lambda: "model:" in child.stdout)
    child.stop(signal.SIGINT)
    return cache


# The moment to signal: seconds after nmt's handlers are in place (imports,
# Hydra, data, model), or a line of the run's output, signalled at once.
STARTUP_DELAYS = [0.0, 0.03, 0.1, 0.2, 0.4, 0.7, 1.2, 2.0]   # torch's import, Hydra, the data
MARKERS = {  # output -> what the run is doing then
    "toy:": "data prepared, the model being built",
    "model:": "in fit, just before the first update",
    "] - step 1 epoch": "the first updates (their plain log line)",
    "validation step": "writing checkpoints after a validation",
}
MOMENTS = ([(signal.SIGINT, d) for d in STARTUP_DELAYS]
           + [(signal.SIGTERM, d) for d in (0.0, 0.8)]
           + [(signal.SIGINT, m) for m in MARKERS] + [(signal.SIGTERM, "model:"), (signal.SIGTERM, "validation step")])


def interrupt(tmp_path, cache, signum, when):
    run_dir = tmp_path / f"run-{signal.Signals(signum).name}-{MOMENTS.index((signum, when))}"
    child = train(run_dir, cache)
    child.wait_for(child.handles_sigterm)
    if isinstance(when, float):
        time.sleep(when)
    else:
        child.wait_for(lambda: when in child.stdout + child.stderr)
    return run_dir, child, child.stop(signum)


def check_stop(run_dir, child, code, signum) -> str:
    """Before training: the start-up line and no checkpoint. Once training has
    begun: last.pt to continue from, named in the line."""
    line = one_stop_line(child, code, signum)
    last = run_dir / "checkpoints" / "last.pt"
    if line == f"nmt: stopped by {signum.name} {STARTUP}":
        assert not last.exists()
    else:
        step = load_checkpoint(last)["progress"]["step"]
        assert step >= 1
        assert line == (f"nmt: stopped by {signum.name} at step {step}; checkpoint {last}; "
                        f"continue with: {continue_command(run_dir)}")
        assert " experiment=quickstart " in line      # the run's whole command, from its .hydra record
    if run_dir.exists():
        no_partial_files(run_dir)
    return line


def test_train_stops_at_any_moment(tmp_path, warm_cache):
    """16 moments, two runs at a time to keep the test short."""
    def one(moment):
        signum, when = moment
        line = check_stop(*interrupt(tmp_path, warm_cache, signum, when), signum)
        if when == "toy:":              # the model build takes far longer than a signal
            assert line.endswith(STARTUP), line
        if when in ("] - step 1 epoch", "validation step"):
            assert not line.endswith(STARTUP), line
        return line

    with ThreadPoolExecutor(2) as pool:
        lines = list(pool.map(one, MOMENTS))
    assert sum(line.endswith(STARTUP) for line in lines) >= len(STARTUP_DELAYS), lines


# -- nmt.translate ---------------------------------------------------------------

@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
@pytest.mark.parametrize("delay", [0.0, 0.2, 1.0])
def test_translate_stops_while_loading_or_reading_stdin(tmp_path, toy_checkpoint, signum, delay):
    """stdin stays open (a user still typing): the signal lands while torch
    loads, the checkpoint loads, or the read waits for input."""
    output = tmp_path / "out.txt"
    output.write_text("an older translation\n")
    child = Child("nmt.translate", "--checkpoint", str(toy_checkpoint), "--output", str(output), "--overwrite",
                  stdin=subprocess.PIPE)
    child.wait_for(child.handles_sigterm)
    time.sleep(delay)
    code = child.stop(signum)
    child.process.stdin.close()
    assert one_stop_line(child, code, signum).startswith(f"nmt: stopped by {signum.name}; ")
    assert output.read_text() == "an older translation\n"         # untouched
    no_partial_files(tmp_path)


def test_translate_stops_while_decoding(tmp_path, toy_checkpoint):
    # How long loading takes on this machine now: an empty input, then exit.
    empty = Child("nmt.translate", "--checkpoint", str(toy_checkpoint))
    empty.wait_for(empty.handles_sigterm)
    started = time.monotonic()
    assert empty.process.wait(timeout=90) == 0
    loading = time.monotonic() - started
    source = tmp_path / "in.txt"
    source.write_text("monday the twenty first of march nineteen eighty four\n" * 20000)
    output = tmp_path / "out.txt"
    child = Child("nmt.translate", "--checkpoint", str(toy_checkpoint), "--input", str(source),
                  "--output", str(output), "--beam-size", "5")
    child.wait_for(child.handles_sigterm)
    time.sleep(loading + 1.0)             # decoding: 20,000 beam-5 lines take a minute or more
    assert child.process.poll() is None
    code = child.stop(signal.SIGINT)
    one_stop_line(child, code, signal.SIGINT)
    assert not output.exists()            # nothing, rather than a part
    no_partial_files(tmp_path)


# -- the other commands that load torch: nmt.average, nmt.explore ------------------------

@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
@pytest.mark.parametrize("delay", [0.0, 0.3, 1.0])
def test_average_stops_while_loading(tmp_path, toy_checkpoint, signum, delay):
    output = tmp_path / "avg.pt"
    child = Child("nmt.average", str(toy_checkpoint), str(toy_checkpoint), "--output", str(output))
    child.wait_for(child.handles_sigterm)
    time.sleep(delay)
    code = child.stop(signum)
    if code == 0:                         # a fast machine finished first: the output is whole
        assert load_checkpoint(output)["model"]
        return
    assert one_stop_line(child, code, signum) == f"nmt: stopped by {signum.name}; --output is written " \
                                                 "whole or not at all"
    if output.exists():                   # the signal came after the rename, while it printed its line
        assert load_checkpoint(output)["model"]
    no_partial_files(tmp_path)


SHUTDOWN_SCRIPT = """
import os, signal, sys, time
from nmt.base import signals
signals.install("; test")
SIGNUM = signal.{name}

class SignalsWhenCollected:                 # __main__'s globals are cleared after Python's shutdown began
    def __del__(self):
        os.kill(os.getpid(), SIGNUM)
        time.sleep(0.2)

if sys.argv[1] == "atexit":                 # a later atexit call: the program is still finishing
    import atexit
    atexit.register(lambda: (os.kill(os.getpid(), SIGNUM), time.sleep(0.2)))
else:
    left_for_teardown = SignalsWhenCollected()
print("done", flush=True)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
@pytest.mark.parametrize("moment", ["atexit", "teardown"])
def test_signal_at_exit(signum, moment):
    """In the program's atexit calls a stop signal is reported as anywhere
    else; in the interpreter's teardown after them (where Python has given the
    handlers back to the system) it is ignored: no -N status without a line."""
    result = subprocess.run([sys.executable, "-c", SHUTDOWN_SCRIPT.format(name=signum.name), moment], cwd=ROOT,
                            env=ENV, capture_output=True, text=True, timeout=60)
    if moment == "atexit":
        expected = (128 + signum, "done\n", f"nmt: stopped by {signum.name}; test\n")
    else:
        expected = (0, "done\n", "")
    assert (result.returncode, result.stdout, result.stderr) == expected


PENDING_SCRIPT = """
import os, signal, sys, time
from nmt.base import signals
from nmt.base.cli import print_error
signals.install("; test")
signals.set_pending_error("another rank stopped or stayed silent (at step 3)")
if sys.argv[1] == "printed":              # the error's own line came first
    print_error("another rank stopped or stayed silent (at step 3)")
if sys.argv[1] == "next job":             # a sweep's failed job: the next one is stopped
    print_error("another rank stopped or stayed silent (at step 3)")
    signals.next_job()
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(5)
print("not reached", flush=True)
"""


@pytest.mark.parametrize("moment", ["before its line", "printed", "next job"])
def test_a_signal_while_an_error_is_on_its_way_reports_the_error(moment):
    """An error on its way to its line (cleaning up first) and a stop signal in
    between (a launcher stopping the survivors of a lost rank): the one line is
    the error, status 1; after the error's own line, the signal adds none; a
    sweep's next job, stopped, says so."""
    result = subprocess.run([sys.executable, "-c", PENDING_SCRIPT, moment], cwd=ROOT, env=ENV,
                            capture_output=True, text=True, timeout=60)
    line = "nmt: error: another rank stopped or stayed silent (at step 3)\n"
    expected = {"before its line": (1, line), "printed": (143, line),
                "next job": (143, line + "nmt: stopped by SIGTERM; test\n")}[moment]
    assert (result.returncode, result.stderr) == expected and result.stdout == ""


LEAVING_SCRIPT = """
import os, runpy, signal, sys, time
from nmt.base.errors import NmtError
from nmt.training import loop, reporting

def fail_in_training(self):            # an error raised while training, e.g. a disk gone full
    raise NmtError("made-up failure while training")

close = reporting.Reporter.close
def close_after_a_signal(self, drop=False):   # the trainer's last clean-up: the launcher's SIGTERM lands here
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(2)
    close(self, drop=drop)

loop.Trainer.train = fail_in_training
reporting.Reporter.close = close_after_a_signal
sys.argv = ["nmt.train", *sys.argv[1:]]
runpy.run_module("nmt.train", run_name="__main__", alter_sys=True)
"""


def test_a_stop_signal_while_training_fails_reports_the_failure(tmp_path, warm_cache):
    """The whole trainer path: an NmtError leaves fit(), and a SIGTERM arrives during
    the clean-up before its line is written; the one line is the error, status 1."""
    result = subprocess.run([sys.executable, "-c", LEAVING_SCRIPT, *TRAIN, f"cache_dir={warm_cache}",
                             f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT, env=ENV, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 1, result.stderr[-2000:]
    assert stderr_lines(result.stderr) == ["nmt: error: made-up failure while training"], result.stderr[-2000:]


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("delay", [0.0, 0.5, 1.5])
def test_explorer_stops_while_starting(toy_checkpoint, delay):
    child = Child("nmt.explore", "--checkpoint", str(toy_checkpoint), "--port", str(free_port()))
    child.wait_for(child.handles_sigterm)
    time.sleep(delay)
    code = child.stop(signal.SIGINT)
    lines = stderr_lines(child.stderr)
    assert code == 130 and "Traceback" not in child.stderr, child.stderr
    assert lines[-1] in ("nmt: stopped by SIGINT before the explorer was serving",
                         "nmt: stopped by SIGINT; the explorer has shut down"), lines
    assert len(lines) == 1 or lines[0].startswith("nmt: attention explorer on ")


def test_explorer_stops_while_serving(toy_checkpoint):
    child = Child("nmt.explore", "--checkpoint", str(toy_checkpoint), "--port", str(free_port()))
    child.wait_for(lambda: "explorer on http" in child.stderr)
    time.sleep(0.5)                       # uvicorn is listening
    code = child.stop(signal.SIGINT)
    assert code == 130 and "Traceback" not in child.stderr, child.stderr
    assert stderr_lines(child.stderr)[1:] == ["nmt: stopped by SIGINT; the explorer has shut down"]
