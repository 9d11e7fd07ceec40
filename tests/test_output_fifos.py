"""An output path that is a FIFO (issue 58, item 1): every writer of nmt either
writes into the pipe (its reader gets the whole output, the FIFO stays where it
was, nothing is written beside it, exit 0) or, where the output is a folder by
design (--plot-attention, nmt.export), refuses it in one line before anything is
written (exit 1). No case may hang: each runs under a deadline."""

import csv
import io
import json
import os
import signal
import threading
import time

import pytest
import torch

from nmt.commands.average import main as average
from nmt.commands.compare import main as compare
from nmt.commands.export import main as export
from nmt.commands.translate import main as translate
from nmt.data.alignments import main as alignments
from tests.test_compare import make_run
from tests.test_own_files import _save, one_line, snapshot

DEADLINE = 60          # seconds a case may take; a writer that waits for ever fails at it


class Hang(Exception):
    """A case ran past DEADLINE."""


def _hang(signum, frame):
    raise Hang(f"still running after {DEADLINE} s")


class Reader:
    """A reader attached to the FIFO at `path` before the writer starts: it keeps all it receives."""

    def __init__(self, path):
        self.path, self.received = path, None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        with open(self.path, "rb") as pipe:        # waits for a writer, as `cat FIFO` does
            self.received = pipe.read()

    def finish(self) -> bytes:
        """What the reader got; when no writer ever opened the FIFO, a writer that closes at once
        ends its wait (it then got b"")."""
        started = time.monotonic()
        while self.thread.is_alive() and time.monotonic() - started < DEADLINE:
            try:
                os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:                       # ENXIO: the reader is not waiting in open() yet
                pass
            self.thread.join(0.1)
        assert not self.thread.is_alive(), "the reader never got to the end of the output"
        return self.received


def run_with_deadline(run) -> int:
    previous = signal.signal(signal.SIGALRM, _hang)
    signal.alarm(DEADLINE)
    try:
        return run()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def lines(data: bytes) -> list[str]:
    return data.decode("utf-8").splitlines()


def _translate(*extra):
    return lambda tmp_path, fifo, ckpt: translate(["--checkpoint", str(ckpt), "--input", str(tmp_path / "in.txt"),
                                                   *[str(fifo) if x is FIFO else x for x in extra]])


def _compare(tmp_path, fifo, ckpt):
    make_run(tmp_path / "sweep", "0", "bahdanau", [(100, 10.0)])
    return compare([str(tmp_path / "sweep"), "--csv", str(fifo)])


FIFO = object()        # where the FIFO's path goes in a command line
PAGE = "<html><body>a view</body></html>"
# (name, the writer given (tmp_path, fifo, checkpoint), what the reader must have got: a check of the bytes,
#  or the refusal's words)
WRITERS = [
    ("translate --output", _translate("--output", FIFO), lambda got: len(lines(got)) == 1 and lines(got)[0].strip()),
    ("translate --attention-html", _translate("--attention-html", FIFO),
     lambda got: got.lstrip().lower().startswith(b"<!doctype html") and got.rstrip().endswith(b"</html>")),
    ("translate --beam-tree", _translate("--beam-tree", FIFO), lambda got: isinstance(json.loads(got), (dict, list))),
    ("translate --json", _translate("--explain", "saliency", "--json", FIFO),
     lambda got: isinstance(json.loads(got), (dict, list))),
    ("average --output", lambda t, f, c: average([str(c), "--output", str(f)]),
     lambda got: "model" in torch.load(io.BytesIO(got), weights_only=True)),
    ("compare --csv", _compare, lambda got: next(csv.reader(io.StringIO(got.decode()))) and len(lines(got)) == 2),
    ("nmt.data.alignments", lambda t, f, c: alignments(["toy", str(f), "--n-train", "5"]),
     lambda got: len(lines(got)) == 5 and all(all("-" in link for link in line.split()) for line in lines(got))),
    ("InlineView.save", lambda t, f, c: _save(f, []), lambda got: got == PAGE.encode()),
    ("translate --plot-attention", _translate("--plot-attention", FIFO), "is a FIFO (named pipe), not a folder"),
    ("translate --plot-attention, a picture name", lambda t, f, c: _translate("--plot-attention", str(f.parent))(t, f, c),
     "its 00001.png is a FIFO (named pipe), not a picture"),
    ("nmt.export --output", lambda t, f, c: export(["--checkpoint", str(c), "--output", str(f)]),
     "is a FIFO (named pipe); give a folder name"),
]


@pytest.mark.parametrize("name, write, expect", WRITERS, ids=[w[0] for w in WRITERS])
def test_an_output_that_is_a_fifo_is_written_into_or_refused_in_one_line(tmp_path, toy_checkpoint, capsys,
                                                                         name, write, expect):
    (tmp_path / "in.txt").write_text("the first of may\n")
    fifo = tmp_path / ("maps/00001.png" if name.endswith("a picture name") else "pipe")   # DIR/its first picture
    fifo.parent.mkdir(exist_ok=True)
    os.mkfifo(fifo)
    reader = Reader(fifo)
    code = run_with_deadline(lambda: write(tmp_path, fifo, toy_checkpoint))
    got = reader.finish()
    if isinstance(expect, str):                      # a folder by design: refused before anything is written
        assert code == 1, name
        assert expect in one_line(capsys) and got == b"", name
    else:
        assert code == 0, (name, capsys.readouterr().err)
        assert "Traceback" not in capsys.readouterr().err
        assert expect(got), (name, got[:200])
    pipes = [p for p in tmp_path.rglob("*") if p.is_fifo()]
    assert len(pipes) == 1, name                      # the FIFO left in place, not replaced by a file
    written = set(snapshot(tmp_path)) - {"in.txt"}
    assert {p for p in written if not p.startswith("sweep/")} == set(), (name, written)   # nothing beside it
