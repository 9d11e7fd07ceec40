"""Where the test suite spends its CPU: a pytest plugin, off unless asked for.

    python -m pytest -p tests.cpu_census

Each test's CPU seconds go to `cpu_census.jsonl` (or to $NMT_CPU_CENSUS) as one JSON
line, in three parts: `own` (the test's process, every thread of it), `children` (the
processes it started and waited for: fresh interpreters, `bash -c`, torchrun and their
ranks) and `served` (the commands its worker's fork server ran for it,
`tests/fork_server.py`, read from the server's /proc entry). At the end the run prints
the tests that took the most. On a 2-core machine the suite is CPU-bound, so these
seconds, not a test's wall time under the workers, say where a shorter suite comes from.
"""

import json
import os
import resource
import sys
import time
from pathlib import Path

import pytest

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
SHOWN = 15


def census_path() -> Path:
    return Path(os.environ.get("NMT_CPU_CENSUS", "cpu_census.jsonl"))


def cpu_seconds(usage) -> float:
    return usage.ru_utime + usage.ru_stime


def served_seconds() -> float:
    """CPU seconds of the fork server's finished children (0 where no server runs)."""
    helpers = sys.modules.get("tests.helpers")
    servers = getattr(helpers, "_SERVER", None) if helpers else None
    if not servers:
        return 0.0
    try:
        fields = Path(f"/proc/{servers[0].process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[13]) + int(fields[14])) / TICK  # cutime, cstime: the children it waited for


def is_worker(config) -> bool:
    """An xdist worker's config has workerinput (the environment is no guide: a pytest run
    started from inside a test inherits PYTEST_XDIST_WORKER)."""
    return hasattr(config, "workerinput")


def pytest_configure(config) -> None:
    if not is_worker(config):  # the controller (or a plain run) starts a new census
        census_path().unlink(missing_ok=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own, children, served = cpu_seconds(resource.getrusage(resource.RUSAGE_SELF)), \
        cpu_seconds(resource.getrusage(resource.RUSAGE_CHILDREN)), served_seconds()
    started = time.perf_counter()
    yield
    served_after = served_seconds()
    line = {"test": item.nodeid, "wall": round(time.perf_counter() - started, 3),
            "own": round(cpu_seconds(resource.getrusage(resource.RUSAGE_SELF)) - own, 3),
            "children": round(cpu_seconds(resource.getrusage(resource.RUSAGE_CHILDREN)) - children, 3),
            "served": round(served_after - served, 3) if served_after >= served else 0.0}  # a new server: 0
    with open(census_path(), "a", encoding="utf-8") as census:  # one short line: appends do not interleave
        census.write(json.dumps(line) + "\n")


def pytest_terminal_summary(terminalreporter) -> None:
    if is_worker(terminalreporter.config) or not census_path().exists():
        return
    lines = [json.loads(text) for text in census_path().read_text(encoding="utf-8").splitlines()]
    for line in lines:
        line["cpu"] = line["own"] + line["children"] + line["served"]
    parts = {part: sum(line[part] for line in lines) for part in ("own", "children", "served")}
    terminalreporter.write_sep("-", f"CPU census ({census_path()})")
    terminalreporter.write_line(f"{len(lines)} tests, {sum(parts.values()):.1f} CPU-s: own {parts['own']:.1f}, "
                                f"children {parts['children']:.1f}, served by the fork servers {parts['served']:.1f}")
    for line in sorted(lines, key=lambda x: -x["cpu"])[:SHOWN]:
        terminalreporter.write_line(f"{line['cpu']:7.1f}  {line['test']}")
