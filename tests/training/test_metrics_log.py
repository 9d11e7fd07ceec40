"""metrics.jsonl: every reader takes the same records and leaves out a line a kill cut short."""

import json
from pathlib import Path

from nmt.store.averaging import run_scores
from nmt_study.metrics import read_metrics
from nmt.store.metrics_log import parse_record, read_records
from nmt.training.run_dir import drop_metrics_after
from scripts.benchmarks import plot_learning_curve


WHOLE = [{"step": 300, "bleu": 10.5, "chrf": 30.0, "loss": 4.0, "train_seconds": 60.0},
         {"step": 600, "bleu": 20.25, "chrf": 40.0, "loss": 3.0, "train_seconds": 120.0}]
BROKEN = ['{"step": 900, "bleu": 2', "", "[1, 2]", '"step"', '{"bleu": 3.0}', '{"step": "nine"}', "\ufffd\ufffd"]


def write_run(run: Path) -> Path:
    run.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(WHOLE[0]), BROKEN[1], BROKEN[2], json.dumps(WHOLE[1]), *BROKEN[3:], BROKEN[0]]
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


def test_a_line_is_a_record_only_when_whole_with_a_step():
    assert parse_record('{"step": "300", "bleu": 1.0}') == {"step": 300, "bleu": 1.0}
    for line in BROKEN:
        assert parse_record(line) is None, line


def test_every_reader_sees_the_two_whole_records(tmp_path):
    run = write_run(tmp_path / "run")
    assert read_records(run) == WHOLE
    assert read_metrics(run) == WHOLE                                   # the study's reports
    assert run_scores(run, "bleu") == {300: 10.5, 600: 20.25}           # nmt.average --run --best
    assert run_scores(run, "loss") == {300: -4.0, 600: -3.0}            # lower loss ranks higher
    minutes, records, label = plot_learning_curve.bleu_points(run)      # no train.log: train_seconds
    assert (minutes, records, label) == ([1.0, 2.0], WHOLE, "training minutes")
    assert read_records(tmp_path / "no_run_yet") == []


def test_resume_keeps_the_same_records_and_drops_the_rest(tmp_path):
    run = write_run(tmp_path / "run")
    assert drop_metrics_after(run / "metrics.jsonl", 600) == WHOLE[1]
    assert (run / "metrics.jsonl").read_text().splitlines() == [json.dumps(r) for r in WHOLE]
    assert drop_metrics_after(run / "metrics.jsonl", 300) == WHOLE[0]
    assert read_records(run) == WHOLE[:1]
