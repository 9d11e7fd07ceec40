"""`python -m MODULE ARGS` for tests, in a fresh process that starts with torch already imported.

Every CLI test would otherwise spend about 3 s of its core importing torch in
a new interpreter. A server process per test worker imports torch once and
waits; each command is a child forked from it, which then does what
`python -m` does: its own working folder, environment, argv, sys.path[0]
(the working folder), stdin, stdout and stderr (files), `runpy` running the
module as __main__, Python's handling of SystemExit and of an uncaught
exception (the traceback on stderr, exit code 1), atexit handlers and
non-daemon threads at exit, and the exit code or the signal that ended it.
The server has started no thread when it forks.

What a fork cannot give, a real process does (helpers.run_cli falls back to
one): an environment other than the server's (libraries read some variables
when imported), and anything a test wants to see of a cold start.
"""

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# What the server imports once, the bulk of every command's start: torch, the part of it
# the first optimizer imports (torch._dynamo, 2 s), the libraries every command loads, and
# nmt's library modules under the commands (1 s more: TensorBoard's writer, pyplot); never a
# command's own module (nmt.train, nmt.translate, ...), which runpy must import as __main__.
# None of them reads a variable run_cli may change, or leaves a Python thread running.
PRELOADED = ("torch", "torch._dynamo", "hydra", "omegaconf", "sentencepiece", "sacrebleu", "matplotlib", "tqdm",
             "torch.utils.tensorboard", "matplotlib.pyplot", "nmt.training.build", "nmt.translator")
VOLATILE = ("PYTEST_CURRENT_TEST",)   # set anew for every test; read by no library at import


def _stable(env: dict) -> dict:
    return {k: v for k, v in env.items() if k not in VOLATILE}


def _child(request: dict) -> None:
    """In the forked child: become `python -m module args` and never return."""
    import atexit
    import io
    import runpy
    import threading
    import traceback

    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, (path, mode) in enumerate(((request["stdin"], os.O_RDONLY), (request["stdout"], os.O_WRONLY),
                                           (request["stderr"], os.O_WRONLY))):
            opened = os.open(path, mode)
            os.dup2(opened, fd)
            os.close(opened)
        sys.stdin = io.TextIOWrapper(io.open(0, "rb", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.open(1, "wb", buffering=0, closefd=False), encoding="utf-8",
                                      write_through=True)             # PYTHONUNBUFFERED=1, as run_cli sets
        sys.stderr = io.TextIOWrapper(io.open(2, "wb", buffering=0, closefd=False), encoding="utf-8",
                                      errors="backslashreplace", write_through=True)
        sys.argv = [request["module"], *request["args"]]
        sys.path[0] = os.getcwd()
        try:
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as stop:
            if stop.code is None:
                code = 0
            elif isinstance(stop.code, int):
                code = stop.code
            else:
                print(stop.code, file=sys.stderr)
                code = 1
        except BaseException:                       # noqa: BLE001 (what python itself does: print, exit 1)
            traceback.print_exc()
            code = 1
        shutdown = getattr(threading, "_shutdown", None)    # joins non-daemon threads, as interpreter exit does
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                code = code or 120                  # python's exit code when flushing stdout fails
    finally:
        os._exit(code & 0xFF)


def serve() -> None:
    """The server: preload, then one request per line on stdin, one answer per line on stdout."""
    for name in PRELOADED:
        __import__(name)
    gc.freeze()     # the preloaded objects: never scanned by a child's collector, so their pages stay shared
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        answers.write(json.dumps({"pid": pid}) + "\n")
        _, status = os.waitpid(pid, 0)
        answers.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")


class ForkServer:
    """The client: one server per test process, started on first use."""

    def __init__(self, root: Path):
        self.env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.process = subprocess.Popen([sys.executable, "-c", "from tests.fork_server import serve; serve()"],
                                        cwd=root, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.pending = b""          # answer bytes read past the last full line

    def serves(self, env: dict) -> bool:
        """Whether a child of this server can run with `env`: the server's own, but for
        variables no library reads when imported (pytest's name of the running test)."""
        return self.process.poll() is None and _stable(env) == _stable(self.env)

    def run(self, module: str, args, input: bytes | None, cwd, timeout: float,
            env: dict) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", module, *args]
        with tempfile.TemporaryDirectory(prefix="nmt-fork-") as folder:
            stdin, stdout, stderr = (Path(folder) / name for name in ("stdin", "stdout", "stderr"))
            stdin.write_bytes(input or b"")
            stdout.touch()
            stderr.touch()
            request = {"module": module, "args": [str(a) for a in args], "cwd": str(cwd), "env": env,
                       "stdin": str(stdin) if input is not None else os.devnull, "stdout": str(stdout),
                       "stderr": str(stderr)}
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
            pid = self._answer(max(60, timeout))["pid"]     # the first answer waits for the server's imports too
            try:
                returncode = self._answer(timeout)["returncode"]
            except TimeoutError:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
                self._answer(60)                            # the server's word on the killed child
                raise subprocess.TimeoutExpired(argv, timeout) from None
            return subprocess.CompletedProcess(argv, returncode, stdout.read_bytes(), stderr.read_bytes())

    def _answer(self, timeout: float) -> dict:
        """The server's next answer line; TimeoutError when none comes within `timeout` seconds."""
        import select

        fd, deadline = self.process.stdout.fileno(), time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError("the fork server ended")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            deadline = time.monotonic() + 10
            while self.process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if self.process.poll() is None:
                self.process.kill()
