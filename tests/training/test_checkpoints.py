"""Checkpoints are written atomically and read as untrusted input."""

import functools
import os
import pickle
import subprocess
import sys
import textwrap

import pytest
import torch

from nmt.base.errors import NmtError
from nmt.store.checkpoints import (check_fingerprint, data_fingerprint, load_checkpoint,
                                      prune_step_checkpoints, save_checkpoint)


@functools.cache
def stored_config() -> dict:
    """A config as nmt.train stores it (the default model): load_checkpoint checks it."""
    from omegaconf import OmegaConf

    from tests.helpers import make_config

    return {"model": OmegaConf.to_container(make_config().model, resolve=True)}


def minimal_state(value=1.0):
    return {"config": stored_config(), "tokenizer": {"joint": b"proto"}, "model": {"w": torch.tensor([value])}}


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
        from nmt.base.errors import NmtError
        from nmt.store.checkpoints import save_checkpoint
        state = {{"config": {stored_config()!r}, "tokenizer": {{"j": b"x"}}, "model": {{"w": torch.zeros(100000)}}}}
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
        from nmt.store.checkpoints import save_checkpoint
        state = {{"config": {stored_config()!r}, "tokenizer": {{"j": b"x"}}, "model": {{"w": torch.zeros(60_000_000)}}}}
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


def test_one_state_under_several_names_is_one_file_until_a_name_is_replaced(tmp_path):
    last, best, step = tmp_path / "last.pt", tmp_path / "best.pt", tmp_path / "step_6.pt"
    save_checkpoint(minimal_state(6.0), last, also=[best, step])
    assert last.stat().st_ino == best.stat().st_ino == step.stat().st_ino and last.stat().st_nlink == 3
    assert [load_checkpoint(p)["model"]["w"].item() for p in (last, best, step)] == [6.0, 6.0, 6.0]
    save_checkpoint(minimal_state(8.0), last)       # a later last.pt, its validation no better
    assert load_checkpoint(last)["model"]["w"].item() == 8.0
    assert load_checkpoint(best)["model"]["w"].item() == 6.0 == load_checkpoint(step)["model"]["w"].item()
    assert best.stat().st_nlink == 2
    save_checkpoint(minimal_state(9.0), last, also=[best])     # a link replaces an older best.pt
    assert load_checkpoint(best)["model"]["w"].item() == 9.0 and load_checkpoint(step)["model"]["w"].item() == 6.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.pt", "last.pt", "step_6.pt"]


def test_without_hard_links_each_name_is_written(tmp_path, monkeypatch):
    """A file system without hard links (EPERM, as on FAT or some network mounts): each name gets the bytes."""
    def refused(*args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", refused)
    last, best = tmp_path / "last.pt", tmp_path / "best.pt"
    save_checkpoint(minimal_state(3.0), last, also=[best])
    assert last.stat().st_ino != best.stat().st_ino and last.read_bytes() == best.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.pt", "last.pt"]


def test_a_symlinked_name_keeps_pointing_at_the_new_file(tmp_path):
    kept = tmp_path / "kept"
    kept.mkdir()
    (tmp_path / "best.pt").symlink_to(kept / "best.pt")
    save_checkpoint(minimal_state(4.0), tmp_path / "last.pt", also=[tmp_path / "best.pt", tmp_path / "last.pt"])
    assert (tmp_path / "best.pt").is_symlink() and load_checkpoint(kept / "best.pt")["model"]["w"].item() == 4.0
    assert not [p for p in (*tmp_path.iterdir(), *kept.iterdir()) if p.name.startswith(".")]


def test_prune_keeps_the_newest(tmp_path):
    for step in (5, 10, 100, 20):
        (tmp_path / f"step_{step}.pt").write_bytes(b"x")
    prune_step_checkpoints(tmp_path, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_100.pt", "step_20.pt"]


# -- the data fingerprint checked on resume ----------------------------------------

DATA = {"kind": "toy", "n_train": 8000, "max_len": 32, "batch_tokens": 1024, "vocab_size": 240}
PROTOS = {"src": b"model-a", "tgt": b"model-a"}


def test_fingerprint_by_hand():
    import hashlib

    found = data_fingerprint(DATA, PROTOS)
    # batch_tokens says how sentences are batched, not which: left out
    assert found["data"] == {"kind": "toy", "max_len": 32, "n_train": 8000, "vocab_size": 240}
    # sha256 over "src\0model-a\0tgt\0model-a\0", sides in sorted order
    assert found["tokenizer"] == hashlib.sha256(b"src\0model-a\0tgt\0model-a\0").hexdigest()
    assert data_fingerprint(dict(DATA, batch_tokens=9), PROTOS) == found


def test_fingerprint_round_trips_a_checkpoint(tmp_path):
    state = dict(minimal_state(), fingerprint=data_fingerprint(DATA, PROTOS))
    loaded = load_checkpoint(save_checkpoint(state, tmp_path / "last.pt"))   # weights_only=True
    check_fingerprint(loaded, data_fingerprint(DATA, PROTOS), "last.pt")     # same: no error


def test_other_data_settings_are_one_line_naming_both():
    state = {"fingerprint": data_fingerprint(DATA, PROTOS)}
    now = data_fingerprint(dict(DATA, vocab_size=200, n_train=500), PROTOS)
    digest = now["tokenizer"][:12]
    with pytest.raises(NmtError) as caught:
        check_fingerprint(state, now, "run/checkpoints/last.pt")
    assert str(caught.value) == (
        "cannot resume from run/checkpoints/last.pt: it was trained on other data or another vocabulary "
        f"(checkpoint: data.n_train=8000, data.vocab_size=240, tokenizer {digest}; this config: "
        f"data.n_train=500, data.vocab_size=200, tokenizer {digest}); resume with the checkpoint's data "
        "settings, or set trainer.resume_force=true to continue anyway")
    check_fingerprint(state, now, "last.pt", force=True)                      # forced: no error


def test_another_tokenizer_alone_is_refused():
    state = {"fingerprint": data_fingerprint(DATA, PROTOS)}
    now = data_fingerprint(DATA, {"src": b"model-b", "tgt": b"model-b"})
    with pytest.raises(NmtError, match=r"\(checkpoint: tokenizer [0-9a-f]{12}; this config: tokenizer "):
        check_fingerprint(state, now, "last.pt")


def test_a_checkpoint_without_fingerprint_is_checked_from_its_config():
    # written before fingerprints: its config's data and its tokenizer give the same thing
    state = {"config": {"data": DATA}, "tokenizer": PROTOS}
    check_fingerprint(state, data_fingerprint(DATA, PROTOS), "old.pt")
    with pytest.raises(NmtError, match="data.max_len=32.*data.max_len=50"):
        check_fingerprint(state, data_fingerprint(dict(DATA, max_len=50), PROTOS), "old.pt")


def test_a_validation_writes_its_state_once_under_every_name(tmp_path, cache_dir):
    """last.pt, best.pt (when it improved) and step_N.pt of one validation are one file,
    and every name holds the state of its own step."""
    from tests.helpers import train

    folder = tmp_path / "checkpoints"
    common = ("experiment=quickstart", "trainer.val_every=1", "trainer.keep_last=2", "trainer.val_max_sentences=4",
              "trainer.heatmap_sentences=0", "trainer.metric=loss")
    train(tmp_path, *common, "trainer.max_steps=1", cache_dir=cache_dir)
    names = ("last.pt", "best.pt", "step_1.pt")
    assert len({(folder / n).stat().st_ino for n in names}) == 1 and (folder / "last.pt").stat().st_nlink == 3
    train(tmp_path, *common, "trainer.max_steps=3", "trainer.resume=auto", cache_dir=cache_dir)
    scores = load_checkpoint(folder / "last.pt")["progress"]["step_scores"]
    best_step = max(scores, key=scores.get)
    assert sorted(p.name for p in folder.iterdir()) == ["best.pt", "last.pt", "step_2.pt", "step_3.pt"]
    assert (folder / "last.pt").stat().st_ino == (folder / "step_3.pt").stat().st_ino
    if best_step != "1":                                    # step_1.pt is pruned (keep_last=2)
        assert (folder / "best.pt").stat().st_ino == (folder / f"step_{best_step}.pt").stat().st_ino
    for name in ("best.pt", "step_2.pt", "step_3.pt"):
        assert load_checkpoint(folder / name)["progress"]["step"] == (int(best_step) if name == "best.pt" else int(name[5]))
