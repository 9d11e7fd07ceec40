"""scripts/benchmarks/ctrl_c_window.py, which measures the README's Ctrl-C window: its
sorting of outcomes by hand, and a real command stopped well after the
window (README: from about 0.1 s on, nmt's line and exit 130)."""

import signal
import sys

from tests.helpers import ROOT
from tests.test_bench_scripts import load_script


def test_outcomes_by_hand():
    window = load_script("ctrl_c_window")
    assert window.outcome(130, "nmt: stopped by SIGINT; an --output file is written whole or not at all\n") == "nmt"
    assert window.outcome(-signal.SIGINT, "") == "silent"
    assert window.outcome(1, "Fatal Python error: init_import_site: Failed to import the site module\n"
                             "Traceback (most recent call last):\nKeyboardInterrupt\n") == "fatal"
    assert window.outcome(-signal.SIGINT, "Traceback (most recent call last):\n  ...\nKeyboardInterrupt\n") == \
        "traceback"
    assert window.outcome(0, "") == "other"


def test_a_ctrl_c_after_the_window_is_nmts(toy_checkpoint):
    window = load_script("ctrl_c_window")
    command = [sys.executable, "-m", "nmt.translate", "--checkpoint", str(toy_checkpoint)]
    for _ in range(2):
        kind, code, stderr = window.one_run(command, 0.5)
        assert (kind, code) == ("nmt", 130), stderr
    assert (ROOT / "scripts" / "ctrl_c_window.py").is_file()
