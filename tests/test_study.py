"""The attention study: its metrics by hand, and the README's command end to end on the toy task."""

import csv
import json

import numpy as np
import pytest

from nmt.study.__main__ import parse_args
from nmt.study.configs import FAMILIES, select, study_configs
from nmt.study.metrics import diagonal_reference, entropy, peak_hits, word_index
from nmt.study.report import aggregate, seed_spread
from tests.helpers import run_cli


def test_entropy_by_hand():
    w = np.array([[1.0, 0.0, 0.0, 0.0],      # one-hot: 0
                  [0.25, 0.25, 0.25, 0.25],  # uniform over 4: ln 4 = 1.3863
                  [0.5, 0.5, 0.0, 0.0]])     # two halves: ln 2 = 0.6931
    assert np.allclose(entropy(w), [0.0, 1.3863, 0.6931], atol=1e-4)


def test_diagonal_reference_by_hand():
    # T=4, S=8: t*S/T = 0, 2, 4, 6
    assert diagonal_reference(4, 8) == [0, 2, 4, 6]
    # T=4, S=3: 0, 0.75, 1.5, 2.25 -> rounded halves up: 0, 1, 2, 2
    assert diagonal_reference(4, 3) == [0, 1, 2, 2]
    # T=3, S=1: everything on the only source position
    assert diagonal_reference(3, 1) == [0, 0, 0]


def test_peak_hits_by_hand():
    w = np.array([[0.7, 0.2, 0.1],
                  [0.1, 0.3, 0.6],
                  [0.2, 0.5, 0.3]])               # peaks 0, 2, 1
    assert peak_hits(w, [0, 1, 1]) == 2            # rows 0 and 2 hit
    # pieces "_a", "b", "_c": words 0, 0, 1; peaks -> words 0, 1, 0
    assert word_index(["\u2581a", "b", "\u2581c"]) == [0, 0, 1]
    assert peak_hits(w, [0, 1, 1], src_words=[0, 0, 1]) == 2


def test_configurations_cover_the_issue():
    names = {c.name for c in study_configs("multi30k")}
    for score in ("bahdanau", "luong_dot", "luong_general", "luong_concat", "luong_location",
                  "scaled_dot", "cosine", "multihead"):
        assert score in names
    for score in ("luong_general", "bahdanau"):
        assert {f"{score}-local_m", f"{score}-local_p", f"{score}-hard"} <= names
    assert "lstmn" in names
    assert {f"bridge-{b}" for b in ("mean", "zero", "zhou", "han", "structured")} <= names
    assert {f"transformer-{p}" for p in ("sinusoidal", "learned", "relative", "rotary", "none")} <= names
    assert {c.family for c in study_configs("toy")} == set(FAMILIES)
    assert [c.name for c in select(study_configs("toy"), "bridge,lstmn")] == [
        "lstmn", "bridge-mean", "bridge-zero", "bridge-zhou", "bridge-han", "bridge-structured"]


def test_study_overrides_on_the_command_line():
    args = parse_args(["study.budget_minutes=1", "study.seeds=2", "trainer.device=cpu"])
    assert (args.budget_minutes, args.seeds, args.overrides) == (1.0, 2, ["trainer.device=cpu"])
    with pytest.raises(SystemExit):
        parse_args(["--budget-minutes", "1", "--budget-steps", "5"])


def test_seed_spread_pools_the_variances():
    runs = [{"name": n, "family": "score", "eval": {"test_bleu": b}} for n, b in
            [("a", 10.0), ("a", 12.0), ("b", 5.0), ("b", 5.0), ("c", 1.0)]]
    table = aggregate(runs)
    assert table["a"]["stats"]["test_bleu"] == (11.0, pytest.approx(2 ** 0.5))
    spread, names = seed_spread(table)
    # variances 2 and 0 -> pooled sqrt(1) = 1; c has one seed and does not count
    assert spread == pytest.approx(1.0) and names == ["a", "b"]


def test_study_on_the_toy_task(tmp_path, cache_dir):
    """The README's command, cut to two configurations, a step budget and a second seed of one."""
    out, runs = tmp_path / "report", tmp_path / "runs"
    result = run_cli("nmt.study", "--data", "toy", "--budget-steps", "20", "--val-every", "10",
                     "--val-sentences", "20", "--test-sentences", "40", "--only", "bahdanau,luong_dot",
                     "--spread", "luong_dot", "--out", str(out), "--runs-dir", str(runs),
                     "--cache-dir", str(cache_dir), "model.attention.window=3", timeout=240)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    readme = (out / "README.md").read_text()
    assert "python -m nmt.study --data toy" in readme
    assert "toy_alignment" in readme and "nrefs:1" in readme      # the sacreBLEU signature
    assert "| bahdanau | 1 |" in readme
    assert "| luong_dot | 2 |" in readme and " ± " in readme       # two seeds: mean ± sd
    assert "gallery_score.png" in readme and "learning_curves.png" in readme
    for picture in ("gallery_score.png", "learning_curves.png"):
        assert (out / picture).read_bytes()[:4] == b"\x89PNG"
    rows = list(csv.DictReader(open(out / "results.csv", encoding="utf-8")))
    assert [(r["configuration"], r["seed"], r["status"]) for r in rows] == [
        ("bahdanau", "1", "finished"), ("luong_dot", "1", "finished"), ("luong_dot", "2", "finished")]
    for row in rows:
        assert 0.0 <= float(row["peak_agreement"]) <= 1.0 and float(row["entropy"]) >= 0.0
        assert float(row["sentences_per_s"]) > 0 and int(row["final_step"]) == 20
    evaluation = json.loads((runs / "bahdanau" / "seed1" / "study_eval.json").read_text())
    assert evaluation["alignment_reference"] == "toy_alignment" and evaluation["test_sentences"] == 40

    # --report-only rewrites the page from the run folders without training.
    (out / "README.md").unlink()
    result = run_cli("nmt.study", "--report-only", "--data", "toy", "--runs-dir", str(runs),
                     "--out", str(out), "--only", "bahdanau,luong_dot", "--spread", "luong_dot",
                     "--cache-dir", str(cache_dir), timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "| luong_dot | 2 |" in (out / "README.md").read_text()


def test_a_failing_configuration_is_reported(tmp_path, cache_dir):
    out, runs = tmp_path / "report", tmp_path / "runs"
    result = run_cli("nmt.study", "--data", "toy", "--budget-steps", "5", "--only", "luong_general",
                     "--out", str(out), "--runs-dir", str(runs), "--cache-dir", str(cache_dir),
                     "--test-sentences", "10", "+model.attention.no_such_option=1", timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    readme = (out / "README.md").read_text()
    assert "0 of 1 finished" in readme and "| luong_general (base: bi-GRU, bridge last) | 0 | failed: exit status 1" in readme
    assert "- luong_general seed 1: exit status 1" in readme
    assert (runs / "luong_general" / "seed1" / "study_failed.txt").exists()
