"""A two-run sweep on one machine (Hydra's basic launcher) ends in one table."""

import csv

from tests.helpers import run_cli


def test_multirun_then_compare(tmp_path):
    sweep = tmp_path / "sweep"
    done = run_cli("nmt.train", "--multirun", "experiment=quickstart",
                   "model/attention=bahdanau,luong_general", "trainer.max_steps=3",
                   "trainer.val_every=3", "trainer.val_max_sentences=5", "trainer.heatmap_sentences=0",
                   f"cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={sweep}")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    table = run_cli("nmt.compare", str(sweep), "--csv", str(tmp_path / "table.csv"))
    assert table.returncode == 0, table.stderr.decode()
    lines = table.stdout.decode().splitlines()
    assert lines[0].startswith("| run | model/attention | parameters | bleu | chrf | perplexity")
    assert len(lines) == 4 and "bahdanau" in lines[2] and "luong_general" in lines[3]
    rows = list(csv.reader(open(tmp_path / "table.csv")))
    assert len(rows) == 3 and rows[0][1] == "model/attention"


def test_compare_on_a_folder_without_runs_is_one_line(tmp_path):
    done = run_cli("nmt.compare", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.decode().strip().count("\n") == 0
    assert "no finished runs" in done.stderr.decode()
