"""Checkpoints are written atomically and read as untrusted input."""

import os
import pickle
import subprocess
import sys
import textwrap

import pytest
import torch

from nmt.errors import NmtError
from nmt.training.checkpoints import load_checkpoint, prune_step_checkpoints, save_checkpoint


def minimal_state(value=1.0):
    return {"config": {"a": 1}, "tokenizer": {"joint": b"proto"}, "model": {"w": torch.tensor([value])}}


def test_round_trip(tmp_path):
    path = save_checkpoint(minimal_state(2.0), tmp_path / "last.pt")
    state = load_checkpoint(path)
    assert state["model"]["w"].item() == 2.0
    assert state["tokenizer"]["joint"] == b"proto"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_truncated_checkpoint_is_one_clear_error(tmp_path):
    path = save_checkpoint(minimal_state(), tmp_path / "last.pt")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(NmtError, match="truncated or not a checkpoint"):
        load_checkpoint(path)


def test_a_text_file_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "notes.pt"
    path.write_text("hello")
    with pytest.raises(NmtError, match="not a checkpoint"):
        load_checkpoint(path)


def test_missing_and_directory(tmp_path):
    with pytest.raises(NmtError, match="does not exist"):
        load_checkpoint(tmp_path / "nope.pt")
    with pytest.raises(NmtError, match="is a directory"):
        load_checkpoint(tmp_path)


def test_checkpoint_without_tokenizer_or_keys(tmp_path):
    state = minimal_state()
    state["tokenizer"] = {}
    with pytest.raises(NmtError, match="no sentencepiece model"):
        load_checkpoint(save_checkpoint(state, tmp_path / "a.pt"))
    torch.save({"model": {}}, tmp_path / "b.pt")
    with pytest.raises(NmtError, match="not an nmt checkpoint"):
        load_checkpoint(tmp_path / "b.pt")


def test_other_format_version_is_refused(tmp_path):
    state = dict(minimal_state(), format_version=99)
    torch.save(state, tmp_path / "old.pt")
    with pytest.raises(NmtError, match="format version 99"):
        load_checkpoint(tmp_path / "old.pt")


class Payload:
    """Unpickling this would create a marker file: code execution."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    state = dict(minimal_state(), format_version=1, extra=Payload(marker))
    torch.save(state, path)
    with pytest.raises(NmtError, match="refused"):
        load_checkpoint(path)
    assert not marker.exists()
    # sanity: a plain unpickler would have run it
    assert pickle.loads(pickle.dumps(Payload(marker))) == 0 and marker.exists()


def test_failed_write_keeps_the_previous_checkpoint(tmp_path):
    """A real full-disk fault: the child may write at most 64 KiB (RLIMIT_FSIZE)."""
    path = tmp_path / "last.pt"
    save_checkpoint(minimal_state(1.0), path)
    script = textwrap.dedent(f"""
        import resource, signal, sys, torch
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
        from nmt.errors import NmtError
        from nmt.training.checkpoints import save_checkpoint
        state = {{"config": {{}}, "tokenizer": {{"j": b"x"}}, "model": {{"w": torch.zeros(100000)}}}}
        try:
            save_checkpoint(state, {str(path)!r})
        except NmtError as e:
            print(e); sys.exit(3)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert "cannot write checkpoint" in done.stdout and "previous checkpoint is kept" in done.stdout
    assert load_checkpoint(path)["model"]["w"].item() == 1.0
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]


def test_sigkill_during_write_keeps_the_previous_checkpoint(tmp_path):
    """Kill a real child while it writes a large checkpoint over last.pt."""
    path = tmp_path / "last.pt"
    save_checkpoint(minimal_state(1.0), path)
    script = textwrap.dedent(f"""
        import sys, torch
        from nmt.training.checkpoints import save_checkpoint
        state = {{"config": {{}}, "tokenizer": {{"j": b"x"}}, "model": {{"w": torch.zeros(60_000_000)}}}}
        print("writing", flush=True)
        while True:
            save_checkpoint(state, {str(path)!r})
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "writing"
    # wait until the temporary file exists, i.e. the child is mid-write
    import time
    deadline = time.time() + 30
    while time.time() < deadline and not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
        time.sleep(0.005)
    child.kill()
    child.wait()
    state = load_checkpoint(path)        # intact: the old one or a complete new one
    assert state["model"]["w"].numel() in (1, 60_000_000)


def test_prune_keeps_the_newest(tmp_path):
    for step in (5, 10, 100, 20):
        (tmp_path / f"step_{step}.pt").write_bytes(b"x")
    prune_step_checkpoints(tmp_path, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_100.pt", "step_20.pt"]
