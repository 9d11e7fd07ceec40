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


def test_a_stopped_rank_is_noticed_at_the_default_timeout(tmp_path, cache_dir):
    """Rank 1 SIGSTOPped after step 3, no trainer.peer_timeout_s given: rank 0 ends with
    one line within the default and the time to save last.pt (it blocked past 90 s at 300)."""
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--log-dir={tmp_path / 'logs'}",
               "--nproc_per_node=2", "-m", "nmt.train", *TINY, "trainer.device=cpu", f"cache_dir={cache_dir}",
               f"hydra.run.dir={run_dir}", "trainer.max_steps=100000", "trainer.val_every=100000"]
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
    assert noticed_after < DEFAULT_S + 45, f"rank 0 ran on for {noticed_after:.0f} s"
    lines = [line for line in err.splitlines() if line.startswith("nmt: error:")]
    assert len(lines) == 1 and "another rank stopped or stayed silent" in lines[0], err[-3000:]
