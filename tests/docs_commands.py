"""Run the commands of a documentation page (README.md, a tutorial) as a reader would:
in an empty folder, one after the other, through bash, with the venv's `python` and
`nmt-*` first on PATH.

Only what would take too long changes: a training command gets TINY overrides appended
(a few updates, a few sentences validated), `nmt-data multi30k DEST` fetches from the
Multi30k folder beside the repository (`--from`), which also replaces an internal page's
`../shared/data/multi30k`, and a server (`nmt.explore`, `tensorboard`) is
started on a free port, asked for its first page, and stopped.

A plain command, `python -m nmt.X ARGS` or `nmt-X ARGS` without any shell syntax,
runs as helpers.run_cli runs one: `python -m nmt.X ARGS` in a process of its own,
forked from the tests' server that has imported torch (the console entry `nmt-X`
is `python -m nmt.X`, pyproject.toml). Everything else runs through bash.
"""

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.helpers import MULTI30K, ROOT, run_cli

TINY = (
    "trainer.max_steps=6",
    "trainer.val_every=6",
    "trainer.val_max_sentences=2",
    "trainer.test_max_sentences=2",
    "trainer.heatmap_sentences=1",
    "trainer.max_minutes=null",
    "data.batch_tokens=256",
)
COMMAND_STARTS = ("python ", "python3 ", "nmt-", "printf ", "echo ", "mkdocs ", "tensorboard ", "pip ")
SERVERS = ("nmt.explore", "nmt-explore", "tensorboard ")


def page_commands(markdown: str) -> list[str]:
    """The commands of a page's code blocks (indented by 4 spaces or fenced as bash/shell):
    lines that start with a command, `$ ` prompts removed, `\\` continuations joined."""
    commands, fenced = [], False
    lines = markdown.splitlines()
    for number, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced and line.strip("`").strip() in ("bash", "shell", "sh", "console")
            continue
        code = (
            line[4:]
            if line.startswith("    ")
            and (number == 0 or not lines[number - 1].strip() or lines[number - 1].startswith("    "))
            else None
        )
        code = line if fenced else code
        if code is None:
            continue
        code = code.strip().removeprefix("$ ")
        if commands and commands[-1].endswith("\\"):
            commands[-1] = commands[-1][:-1].rstrip() + " " + code
        elif code.startswith(COMMAND_STARTS):
            commands.append(code)
    return commands


def tiny(command: str, cache_dir: Path) -> str:
    """The command at test size: each training command (in a `&&` chain too) gets TINY appended,
    and `nmt-data multi30k DEST` reads the Multi30k folder beside the repository as its mirror."""
    command = re.sub(r"data\.path=\.\./shared/data/multi30k\b", f"data.path={MULTI30K}", command)
    parts = []
    for part in command.split(" && "):
        if re.match(r"(python -m nmt\.data|nmt-data) multi30k ", part) and "--from" not in part:
            part = f"{part} --from {MULTI30K}"  # the copy beside the repository as its mirror
        if re.search(r"(python -m nmt\.train|nmt-train)( |$)", part) and "--help" not in part:
            part = f"{part} {' '.join(TINY)} cache_dir={cache_dir}"
        parts.append(part)
    return " && ".join(parts)


# `python -m nmt.train ...`, `python -m nmt_study ...` or `nmt-train ...` whose arguments hold nothing bash would read
PLAIN = re.compile(
    r"^(?:python -m (nmt\.[a-z_.]+|nmt_study[a-z_.]*)|nmt-([a-z]+))((?: [^\s|&;<>()$`\\\"'*?~{}\[\]#!]+)*)$"
)


def plain_command(command: str) -> tuple[str, list[str]] | None:
    """(module, arguments) of a plain nmt command; None for anything bash must run."""
    match = PLAIN.match(command)
    if not match:
        return None
    # nmt-study is the study's package beside nmt; every other nmt-NAME is nmt.NAME
    module = match.group(1) or ("nmt_study" if match.group(2) == "study" else f"nmt.{match.group(2)}")
    return module.removesuffix(".__main__"), match.group(3).split()


def environment() -> dict:
    """The reader's shell: this interpreter's venv first on PATH, as after `. .venv/bin/activate`."""
    bin_dir = str(Path(sys.executable).parent)
    return dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), PYTHONUNBUFFERED="1")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_server(command: str, cwd: Path, timeout: float = 120) -> None:
    """Start a server command on a free port, wait for its first page, stop it."""
    port = free_port()
    command = f"{command} --port {port}" + (" --host 127.0.0.1" if command.startswith("tensorboard") else "")
    process = subprocess.Popen(
        ["bash", "-c", f"exec {command}"], cwd=cwd, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            assert process.poll() is None, f"{command} ended: {process.stdout.read().decode()[-2000:]}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
                    assert answer.status == 200
                    return
            except OSError:
                assert time.monotonic() < deadline, f"{command} did not answer in {timeout} s"
                time.sleep(1)
    finally:
        process.terminate()
        process.wait(timeout=30)


def latest_run(cwd: Path) -> Path:
    """The newest run folder under cwd/outputs that has a best.pt: what `outputs/DATE/TIME` stands for."""
    runs = sorted(p.parent.parent for p in (cwd / "outputs").glob("*/*/checkpoints/best.pt"))
    assert runs, f"no run with a best.pt under {cwd / 'outputs'}"
    return runs[-1]


def run_page(commands: list[str], cwd: Path, cache_dir: Path, timeout: float = 900) -> list[str]:
    """Run each command in turn in `cwd`; a failing one fails with its output. Returns their outputs.
    `outputs/DATE/TIME` is the newest run so far; `mkdocs serve` is checked as `mkdocs build --strict`."""
    outputs = []
    for command in commands:
        command = tiny(command, cache_dir)
        if "outputs/DATE/TIME" in command:
            command = command.replace("outputs/DATE/TIME", str(latest_run(cwd).relative_to(cwd)))
        if command.startswith("mkdocs serve"):
            command = f"mkdocs build --strict --config-file {ROOT / 'mkdocs.yml'} --site-dir {cwd / 'site'}"
        if any(server in command for server in SERVERS):
            check_server(command, cwd)
            outputs.append("")
            continue
        plain = plain_command(command)
        if plain:
            done = run_cli(plain[0], *plain[1], cwd=cwd, timeout=timeout)
            done.stdout, done.stderr = (out.decode("utf-8", "replace") for out in (done.stdout, done.stderr))
        else:
            done = subprocess.run(
                ["bash", "-c", command], cwd=cwd, env=environment(), capture_output=True, text=True, timeout=timeout
            )
        assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        outputs.append(done.stdout)
    return outputs
