"""tests/fork_server.py: a forked command behaves as `python -m` would, in a process of its own."""

import os
import subprocess
import sys

import pytest

from tests.fork_server import ForkServer
from tests.helpers import ROOT

@pytest.fixture(scope="module")
def server():
    forked = ForkServer(ROOT)
    yield forked
    forked.close()


def probe(folder, body: str) -> None:
    (folder / "probe_module.py").write_text(body, encoding="utf-8")


def test_a_command_gets_its_own_folder_environment_argv_and_stdin(server, tmp_path):
    probe(tmp_path, "import os, sys\n"
                    "print(os.getcwd(), os.environ['NMT_PROBE'], sys.argv[1:], sys.stdin.read().strip(), "
                    "sys.path[0], 'torch' in sys.modules)\n")
    env = dict(server.env, NMT_PROBE="seen")
    done = server.run("probe_module", ["a b", "c"], "from stdin\n".encode(), tmp_path, 60, env)
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout.decode() == f"{tmp_path} seen ['a b', 'c'] from stdin {tmp_path} True\n"
    assert "NMT_PROBE" not in os.environ and os.getcwd() != str(tmp_path)     # the test process is untouched


@pytest.mark.parametrize("body, code, stderr_ends", [
    ("import sys\nsys.exit(3)\n", 3, ""),
    ("import sys\nsys.exit('no such file')\n", 1, "no such file\n"),
    ("raise ValueError('broken')\n", 1, "ValueError: broken\n"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", -9, ""),
])
def test_exit_codes_and_tracebacks_are_pythons(server, tmp_path, body, code, stderr_ends):
    probe(tmp_path, body)
    done = server.run("probe_module", [], None, tmp_path, 60, server.env)
    assert done.returncode == code and done.stderr.decode().endswith(stderr_ends)
    plain = subprocess.run([sys.executable, "-m", "probe_module"], cwd=tmp_path, capture_output=True)
    assert plain.returncode == code and plain.stderr.decode().endswith(stderr_ends)


def test_atexit_and_threads_run_before_the_exit(server, tmp_path):
    probe(tmp_path, "import atexit, threading, time\n"
                    "atexit.register(print, 'atexit ran')\n"
                    "threading.Thread(target=lambda: (time.sleep(0.3), print('thread ended'))).start()\n")
    done = server.run("probe_module", [], None, tmp_path, 60, server.env)
    assert done.returncode == 0 and done.stdout.decode() == "thread ended\natexit ran\n"


def test_past_its_timeout_the_command_is_killed_and_the_server_goes_on(server, tmp_path):
    probe(tmp_path, "import time\ntime.sleep(60)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        server.run("probe_module", [], None, tmp_path, 1, server.env)
    probe(tmp_path, "print('next')\n")
    assert server.run("probe_module", [], None, tmp_path, 60, server.env).stdout == b"next\n"


def test_only_the_servers_own_environment_is_served(server):
    assert server.serves(dict(server.env, PYTEST_CURRENT_TEST="another test"))
    assert not server.serves(dict(server.env, OMP_NUM_THREADS="7"))
