"""Shared helpers: build configs with Hydra's compose API, train tiny models."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = str(ROOT / "configs")
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"


def make_config(*overrides: str, cache_dir=None):
    with initialize_config_dir(config_dir=CONFIGS, version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    if cache_dir is not None:
        cfg.cache_dir = str(cache_dir)
    return cfg


def flip_a_bit_of_record(path, record) -> None:
    """Flip one bit in the middle of a zip record's stored bytes (a
    zipfile.ZipInfo of `path`, e.g. one tensor storage of a checkpoint)."""
    with open(path, "r+b") as f:
        f.seek(record.header_offset + 26)            # the local header's name and extra lengths
        name_len, extra_len = (int.from_bytes(f.read(2), "little") for _ in range(2))
        f.seek(record.header_offset + 30 + name_len + extra_len + record.file_size // 2)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 0x10]))


def train(run_dir, *overrides: str, cache_dir=None):
    """Check the config and train in-process, as nmt.train does; returns the Trainer after fit()."""
    from nmt.training.build import build_trainer
    from nmt.training.config_checks import check_config

    cfg = make_config(*overrides, cache_dir=cache_dir)
    check_config(cfg)
    trainer = build_trainer(cfg, Path(run_dir))
    trainer.fit()
    return trainer


def run_cli(module: str, *args: str, input: bytes | None = None, cwd=None, timeout=300,
            env=None) -> subprocess.CompletedProcess:
    """Run `python -m module args` the way a user does, in a process of its own: forked
    from a server that has imported torch (tests/fork_server.py) when the environment is
    the server's, else a fresh interpreter."""
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    server = fork_server()
    if server is not None and server.serves(full_env):
        return server.run(module, args, input, cwd or ROOT, timeout, full_env)
    return subprocess.run([sys.executable, "-m", module, *args], input=input, capture_output=True,
                          cwd=cwd or ROOT, timeout=timeout, env=full_env)


_SERVER = []


def fork_server():
    """This test process's fork server (started on first use), or None where fork is not
    available or NMT_TEST_FRESH_PROCESSES=1 asks for a new interpreter every time."""
    if not hasattr(os, "fork") or os.environ.get("NMT_TEST_FRESH_PROCESSES") == "1":
        return None
    if not _SERVER or _SERVER[0].process.poll() is not None:
        import atexit

        from tests.fork_server import ForkServer

        _SERVER[:] = [ForkServer(ROOT)]
        atexit.register(_SERVER[0].close)
    return _SERVER[0]


def fresh_shell_env() -> dict:
    """A new shell's environment without the project's environment activated: PATH
    holds only the system's folders, so `python`, `nmt-*` and `tensorboard` are not found
    there (PYTHONPATH, where a test run sets one, is kept)."""
    return dict(os.environ, PATH="/usr/bin:/bin", OMP_NUM_THREADS="1")


@pytest.fixture(scope="module")
def one_thread():
    """Torch on one thread for a module: tiny models run no slower, and on a
    busy 2-core machine two threads mostly wait for each other."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
