"""tests/cpu_census.py: each test's CPU seconds, in its own process and in the processes it starts."""

import json
import os
import subprocess
import sys

from tests.helpers import ROOT

BUSY = '''
import subprocess, sys, time


def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_in_its_own_process():
    spin(0.3)


def test_in_a_child():
    subprocess.run([sys.executable, "-c", "import time\\nend = time.process_time() + 0.3\\nwhile time.process_time() < end: pass"], check=True)


def test_idle():
    time.sleep(0.2)
'''


def test_the_census_puts_each_test_s_cpu_where_it_was_spent(tmp_path):
    (tmp_path / "test_busy.py").write_text(BUSY)
    census = tmp_path / "census.jsonl"
    census.write_text('{"test": "left from an earlier run"}\n')
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.cpu_census", "-p", "no:cacheprovider",
                           "-p", "no:xdist", str(tmp_path / "test_busy.py")], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, NMT_CPU_CENSUS=str(census)))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {line["test"].split("::")[1]: line for line in map(json.loads, census.read_text().splitlines())}
    assert set(lines) == {"test_in_its_own_process", "test_in_a_child", "test_idle"}   # a new census each run
    own, child, idle = (lines[n] for n in ("test_in_its_own_process", "test_in_a_child", "test_idle"))
    assert own["own"] >= 0.3 and own["children"] < 0.05
    assert child["children"] >= 0.3 and child["own"] < 0.2
    assert idle["own"] + idle["children"] < 0.1 and idle["wall"] >= 0.2
    summary = done.stdout.split(f"CPU census ({census})", 1)[1].splitlines()[1:5]
    assert summary[0].startswith("3 tests, ")
    cpu = {name: line["own"] + line["children"] + line["served"] for name, line in lines.items()}
    assert [row.split("::")[1] for row in summary[1:]] == sorted(cpu, key=lambda name: -cpu[name])   # most first
