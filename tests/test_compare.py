"""nmt.compare marks the best run by the sweep's trainer.metric and its
direction, sorts by it on request, and shows the step of the best score,
the test scores where there are any, and each run's best.pt. Run folders
written by hand, as nmt.train writes them."""

import json

import pytest

from nmt.commands.compare import main

SUMMARY = {"parameters": 1000, "chrf": 50.0, "perplexity": 3.0, "tokens_per_s": 900.0, "wall_s": 60.0}


def make_run(sweep, name, attention, curve, metric="bleu", **extra):
    """A finished run whose validations scored `curve` [(step, score)] of `metric`."""
    run = sweep / name
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text(f"- model/attention={attention}\n")
    lines = [json.dumps({"step": step, metric: score, "bleu": score if metric == "bleu" else 1.0})
             for step, score in curve]
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    last = curve[-1][1]
    best = (max if metric != "loss" else min)(score for _, score in curve)
    summary = {**SUMMARY, "bleu": last if metric == "bleu" else 1.0, "metric": metric, "best": best, **extra}
    (run / "summary.json").write_text(json.dumps(summary))


def table(capsys, *args):
    assert main([str(a) for a in args]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in out if line.startswith("| ")]
    return rows[0], rows[1:], out[-1]


def test_the_best_run_is_marked_with_the_step_of_its_best_score(tmp_path, capsys):
    # run 1 ends lower than run 0 (20 < 30) but peaked higher (35 at step 200): it is the best
    make_run(tmp_path, "0", "bahdanau", [(100, 10.0), (200, 25.0), (300, 30.0)])
    make_run(tmp_path, "1", "luong_dot", [(100, 12.0), (200, 35.0), (300, 20.0)])
    make_run(tmp_path, "2", "cosine", [(100, 5.0), (200, 8.0), (300, 9.0)])
    header, rows, line = table(capsys, tmp_path)
    assert header[:3] == ["best", "run", "model/attention"]
    assert header[-3:] == ["best bleu", "best step", "best.pt"]
    assert [row[0] for row in rows] == ["", "*", ""]                  # in run order, run 1 marked
    assert rows[1][-3:] == ["35.00", "200", str(tmp_path / "1" / "checkpoints" / "best.pt")]
    assert rows[0][-3:-1] == ["30.00", "300"]
    assert line == (f"* best by validation bleu (higher is better): run 1, 35.00 at step 200; "
                    f"its checkpoint {tmp_path / '1' / 'checkpoints' / 'best.pt'}")

    header, rows, _ = table(capsys, tmp_path, "--sort")
    assert [row[1] for row in rows] == ["1", "0", "2"] and rows[0][0] == "*"


def test_a_loss_metric_marks_the_lowest(tmp_path, capsys):
    make_run(tmp_path, "0", "bahdanau", [(100, 2.5), (200, 1.9)], metric="loss")
    make_run(tmp_path, "1", "luong_dot", [(100, 2.2), (200, 1.7), (300, 1.8)], metric="loss")
    header, rows, line = table(capsys, tmp_path, "--sort")
    assert header[-3] == "best loss"
    assert [row[1] for row in rows] == ["1", "0"] and rows[0][0] == "*" and rows[0][-2] == "200"
    assert line.startswith("* best by validation loss (lower is better): run 1, 1.70 at step 200")


def test_test_scores_are_shown_when_the_runs_have_them(tmp_path, capsys):
    make_run(tmp_path, "0", "bahdanau", [(100, 10.0)], test_bleu=9.5, test_chrf=40.25)
    make_run(tmp_path, "1", "luong_dot", [(100, 12.0)])
    header, rows, _ = table(capsys, tmp_path)
    assert header[-5:] == ["best bleu", "best step", "test_bleu", "test_chrf", "best.pt"]
    assert rows[0][-3:-1] == ["9.50", "40.25"] and rows[1][-3:-1] == ["", ""]


def test_runs_of_different_metrics_are_one_line(tmp_path, capsys):
    make_run(tmp_path, "0", "bahdanau", [(100, 10.0)])
    make_run(tmp_path, "1", "luong_dot", [(100, 2.0)], metric="loss")
    assert main([str(tmp_path)]) == 1
    assert capsys.readouterr().err == ("nmt: error: the runs chose best.pt by different metrics (bleu, loss); "
                                       "compare runs of one trainer.metric\n")


@pytest.mark.parametrize("with_records", [True, False])
def test_a_run_without_metrics_jsonl_uses_summary_json(tmp_path, capsys, with_records):
    make_run(tmp_path, "0", "bahdanau", [(100, 10.0), (200, 14.0)])
    if not with_records:
        (tmp_path / "0" / "metrics.jsonl").unlink()
    _, rows, _ = table(capsys, tmp_path)
    assert rows[0][-3:-1] == (["14.00", "200"] if with_records else ["14.00", ""])
