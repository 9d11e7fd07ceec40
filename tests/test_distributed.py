"""Two CPU ranks through torchrun (gloo) train exactly like one process with
`trainer.accumulate=2`, stop together at the shortest share, resume with
another number of ranks, and leave the process group without hanging."""

import json
import os
import shutil
import signal
import subprocess
import sys
from contextlib import suppress

import pytest

from nmt.data.pipeline import prepare_data
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
