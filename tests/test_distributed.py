"""Two CPU ranks through torchrun (gloo) train exactly like one process with
`trainer.accumulate=2`, stop together at the shortest share, resume with
another number of ranks, leave the process group without hanging, and
notice a rank that dies or stops within `trainer.peer_timeout_s`."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress

import pytest

from nmt.data.pipeline import prepare_data
from nmt.store.checkpoints import load_checkpoint
from tests.helpers import ROOT, make_config, train

TINY = ("experiment=quickstart", "trainer.val_max_sentences=10", "trainer.heatmap_sentences=0",
        "trainer.log_every=1", "trainer.keep_last=0")


def run_to_end(command, timeout):
    """Run `command` in its own process group; past `timeout` every process in it
    prints the stack of each thread (faulthandler, on SIGABRT) and the test fails
    with them."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    with subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGABRT)
            try:
                out, err = process.communicate(timeout=30)
            finally:
                with suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)   # whatever the abort left
            pytest.fail(f"still running after {timeout} s; the threads of each process:\n"
                        f"{err.decode(errors='replace')[-6000:]}")
    assert process.returncode == 0, (out + err).decode(errors="replace")[-3000:]
    return out, err


def torchrun(run_dir, cache_dir, *overrides, ranks=2, timeout=240):
    """`torchrun --nproc_per_node=2 -m nmt.train ...` as the README gives it, on CPU."""
    return run_to_end([sys.executable, "-m", "torch.distributed.run", "--standalone",
                       f"--log-dir={run_dir.parent / 'torchrun_logs'}",     # not a folder left in /tmp
                       f"--nproc_per_node={ranks}", "-m", "nmt.train", *TINY, "trainer.device=cpu",
                       f"cache_dir={cache_dir}", f"hydra.run.dir={run_dir}", *overrides], timeout)


def records(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory, cache_dir):
    """8 updates on 2 ranks, validated at 4 and 8."""
    run_dir = tmp_path_factory.mktemp("ddp") / "run"
    torchrun(run_dir, cache_dir, "trainer.max_steps=8", "trainer.val_every=4")
    return run_dir


@pytest.fixture(scope="module")
def one_process(tmp_path_factory, cache_dir):
    """12 updates in one process, each over 2 batches: the same batches as 2 ranks."""
    run_dir = tmp_path_factory.mktemp("single")
    train(run_dir, *TINY, "trainer.accumulate=2", "trainer.max_steps=12", "trainer.val_every=4",
          cache_dir=cache_dir)
    return run_dir


def test_two_ranks_equal_one_process_accumulating_two(two_ranks, one_process):
    ddp, single = records(two_ranks), records(one_process)
    assert [r["step"] for r in ddp] == [4, 8]
    for a, b in zip(ddp, single):
        assert a["step"] == b["step"]
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-4)      # validation loss after N updates
    assert ddp[-1]["loss"] < ddp[0]["loss"]                          # and it did learn
    # rank 0 alone logged and wrote: each validation once, one set of checkpoints
    log = (two_ranks / "train.log").read_text()
    assert log.count("validation step 8 ") == 1 and log.count("training pairs") == 1
    assert sorted(p.name for p in (two_ranks / "checkpoints").iterdir()) == ["best.pt", "last.pt"]
    assert json.loads((two_ranks / "summary.json").read_text())["step"] == 8


def test_resume_with_another_number_of_ranks(two_ranks, one_process, tmp_path, cache_dir):
    """Stopped after 8 updates on 2 ranks (16 batches); one process continues at batch 16."""
    run_dir = tmp_path / "run"
    shutil.copytree(two_ranks, run_dir)
    resumed = train(run_dir, *TINY, "trainer.accumulate=2", "trainer.max_steps=12",
                    "trainer.val_every=4", "trainer.resume=auto", cache_dir=cache_dir)
    assert resumed.step == 12
    assert records(run_dir)[-1]["step"] == 12
    assert records(run_dir)[-1]["loss"] == pytest.approx(records(one_process)[-1]["loss"], abs=1e-4)


def test_ranks_stop_together_at_the_shortest_share(tmp_path, cache_dir):
    """An epoch of an odd number of batches: 2 ranks make (n - 1) / 2 updates, none hangs."""
    small = ("data.n_train=300", "data.batch_tokens=300")
    cfg = make_config(*TINY, *small, cache_dir=cache_dir)
    n_batches = len(prepare_data(cfg.data, cache_dir, int(cfg.trainer.seed)).train.plan(0))
    assert n_batches % 2 == 1, n_batches          # the shares differ by one
    torchrun(tmp_path / "run", cache_dir, *small, "trainer.max_epochs=1", "trainer.max_steps=1000",
             "trainer.val_every=1000")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["step"] == n_batches // 2


def test_ranks_leave_the_group_without_hanging(tmp_path):
    """100 ends of a run in a row (broadcast, barrier, close, DDP dropped) finish.
    Without `_Lent` one hung within about 30: gloo's barrier kept the broadcast's
    tensor, Python had let go of it, and the worker thread freeing it waited for
    the GIL that the Reducer held while joining that thread."""
    run_to_end([sys.executable, "-m", "tests.distributed_rounds", "100", str(tmp_path / "store")],
               timeout=120)


def rank_pid(torchrun_pid: int, rank: int) -> int | None:
    """The pid of torchrun's worker RANK (torchrun starts each in a session of its own), if alive."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with suppress(OSError):
            parent = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
            environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            if parent == torchrun_pid and f"RANK={rank}".encode() in environ:
                return int(pid)
    return None


@pytest.mark.parametrize("how", [signal.SIGSTOP, signal.SIGKILL], ids=["stopped", "killed"])
def test_a_lost_rank_is_noticed_and_rank_0_saves_last_pt(tmp_path, cache_dir, how):
    """Rank 1 stopped (or killed) after step 3: rank 0 gives up on it after
    trainer.peer_timeout_s, not gloo's 30 minutes, saves last.pt at the last
    finished update and ends with one line, not a traceback."""
    run_dir, timeout_s = tmp_path / "run", 5
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--log-dir={tmp_path / 'torchrun_logs'}",
               "--nproc_per_node=2", "-m",
               "nmt.train", *TINY, "trainer.device=cpu", f"cache_dir={cache_dir}", f"hydra.run.dir={run_dir}",
               "trainer.max_steps=100000", "trainer.val_every=100000", f"trainer.peer_timeout_s={timeout_s}"]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while not (run_dir / "train.log").is_file() or "step 3 " not in (run_dir / "train.log").read_text():
            assert process.poll() is None and time.monotonic() < deadline, "the two ranks never reached step 3"
            time.sleep(0.2)
        rank0, rank1 = rank_pid(process.pid, 0), rank_pid(process.pid, 1)
        os.kill(rank1, how)
        lost_at = time.monotonic()
        while rank_pid(process.pid, 0) == rank0 and time.monotonic() - lost_at < 120:
            time.sleep(0.2)
        noticed_after = time.monotonic() - lost_at
    finally:                                           # torchrun would wait 30 s for a stopped rank
        for pid in (rank_pid(process.pid, 0), rank_pid(process.pid, 1), process.pid):
            with suppress(ProcessLookupError, TypeError):
                os.kill(pid, signal.SIGKILL)
        err = process.communicate()[1].decode(errors="replace")
    assert noticed_after < timeout_s + 30, f"rank 0 ran on for {noticed_after:.0f} s"
    lines = [line for line in err.splitlines() if line.startswith("nmt: error:")]
    assert len(lines) == 1 and "another rank stopped or stayed silent" in lines[0], err[-3000:]
    assert "trainer.resume=auto" in lines[0] and "/nmt/" not in err, err[-3000:]   # no traceback of nmt's code
    state = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    assert state["progress"]["step"] >= 3


def test_only_a_backends_error_in_backward_is_a_lost_peer():
    """Around a backward pass a RuntimeError of the model's own passes through; a
    backend's error, or any error of a collective itself, is PeerLost (one line)."""
    from nmt.training.distributed import Distributed, PeerLost, _peers_alive

    two = Distributed(rank=0, world_size=2)
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        with two.peers_alive():
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
    with pytest.raises(PeerLost, match="Connection closed by peer"):
        with two.peers_alive():
            raise RuntimeError("[../gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:1234")
    with pytest.raises(PeerLost, match="stops too: some failure"):
        with _peers_alive():                       # a collective alone: whatever it raises
            raise RuntimeError("some failure")
