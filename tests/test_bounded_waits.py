"""Waits a user would sit through (issue 58, item 6): a stopped torchrun rank is
noticed at the default trainer.peer_timeout_s, 60 s, not 300 (the explorer's
stalled connections: tests/test_explore_guard.py; a killed study's trainer:
tests/study/test_strict_records.py)."""

import inspect
import os
import signal
import subprocess
import sys
import time
from contextlib import suppress

from nmt.training.distributed import Distributed
from tests.helpers import ROOT
from tests.test_config_schema import compose_config
from tests.test_distributed import TINY, rank_pid

DEFAULT_S = 60


def test_the_default_peer_timeout_is_a_minute_in_the_config_and_the_code():
    assert compose_config().trainer.peer_timeout_s == DEFAULT_S
    assert inspect.signature(Distributed.start).parameters["peer_timeout_s"].default == DEFAULT_S


def stopped_rank_noticed_after(tmp_path, cache_dir, *overrides) -> tuple[float, str]:
    """Rank 1 SIGSTOPped after step 3: (seconds until rank 0 has ended, torchrun's stderr)."""
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--log-dir={tmp_path / 'logs'}",
               "--nproc_per_node=2", "-m", "nmt.train", *TINY, "trainer.device=cpu", f"cache_dir={cache_dir}",
               f"hydra.run.dir={run_dir}", "trainer.max_steps=100000", "trainer.val_every=100000", *overrides]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while not (run_dir / "train.log").is_file() or "step 3 " not in (run_dir / "train.log").read_text():
            assert process.poll() is None and time.monotonic() < deadline, "the two ranks never reached step 3"
            time.sleep(0.2)
        rank0, rank1 = rank_pid(process.pid, 0), rank_pid(process.pid, 1)
        os.kill(rank1, signal.SIGSTOP)
        stopped_at = time.monotonic()
        while rank_pid(process.pid, 0) == rank0 and time.monotonic() - stopped_at < 240:
            time.sleep(0.5)
        noticed_after = time.monotonic() - stopped_at
    finally:
        for pid in (rank_pid(process.pid, 0), rank_pid(process.pid, 1), process.pid):
            with suppress(ProcessLookupError, TypeError):
                os.kill(pid, signal.SIGKILL)
        err = process.communicate()[1].decode(errors="replace")
    lines = [line for line in err.splitlines() if line.startswith("nmt: error:")]
    assert len(lines) == 1 and "another rank stopped or stayed silent" in lines[0], err[-3000:]
    assert (run_dir / "checkpoints" / "last.pt").is_file()
    return noticed_after, err


def test_a_stopped_rank_is_noticed_at_the_default_timeout(tmp_path, cache_dir):
    """No trainer.peer_timeout_s given: rank 0 ends with one line within the default and
    the time to save last.pt (it blocked past 90 s at 300)."""
    noticed_after, _ = stopped_rank_noticed_after(tmp_path, cache_dir)
    assert noticed_after < DEFAULT_S + 20, f"rank 0 ran on for {noticed_after:.0f} s"


def test_a_stopped_rank_ends_rank_0_at_the_timeout_not_a_wait_at_exit_later(tmp_path, cache_dir):
    """trainer.peer_timeout_s=10: rank 0 is gone about 10 s after rank 1 stopped. Before, it
    waited at exit for the backend's threads stuck on the stopped rank: 20.7 s at 10 s
    (up to 10 s for the lent tensors, then the process group's destructors), 105 s at 60 s."""
    noticed_after, _ = stopped_rank_noticed_after(tmp_path, cache_dir, "trainer.peer_timeout_s=10")
    assert 9 < noticed_after < 10 + 6, f"rank 0 ended {noticed_after:.1f} s after rank 1 stopped"
