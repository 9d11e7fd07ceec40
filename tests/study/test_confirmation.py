"""The confirmation runs (issue 45): a second test set scored by every run, the plan of
`--confirm`, and coverage without its loss."""

import json
from pathlib import Path

import pytest

from nmt.data.toy import make_toy_corpus
from nmt_study.__main__ import parse_args, pending
from nmt_study.alignment import toy_links
from nmt_study.configs import CONFIRMATION, select, study_configs
from nmt_study.planning import plan
from nmt_study.second_test import CONFIRM_SET, confirm_pairs
from tests.helpers import run_cli


def write_multi30k_like(folder: Path) -> list[tuple[str, str]]:
    """A Multi30k-shaped folder of toy pairs (train, val, test_2016_flickr, test_2017_flickr):
    -> the pairs of its test_2017 files."""
    corpus = make_toy_corpus(400, 30, 30, 5)
    second = make_toy_corpus(1, 1, 12, 11).test
    folder.mkdir(parents=True)
    for base, pairs in (("train", corpus.train), ("val", corpus.valid), ("test_2016_flickr", corpus.test),
                        (CONFIRM_SET, second)):
        (folder / f"{base}.de").write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
        (folder / f"{base}.en").write_text("".join(t + "\n" for _, t in pairs), encoding="utf-8")
    return second


def test_confirm_plans_its_rows_three_seeds_each_seed_major(tmp_path):
    args = parse_args(["--confirm", "--data-path", str(tmp_path), "--out", str(tmp_path / "multi30k")])
    assert args.out == tmp_path / "confirmation"              # its own folder beside the grid's
    assert args.budget_steps == args.transformer_budget_steps == CONFIRMATION.cap_steps == 20000
    assert (args.patience, args.seeds) == (4, 3)
    configs = select(study_configs("multi30k"), args.only)
    assert {c.name for c in configs} == set(CONFIRMATION.rows) and len(configs) == 10
    seeds = plan(args, configs)
    assert all(s == [1, 2, 3] for s in seeds.values())        # not the grid's 5 for the top group
    todo, total = pending(args, configs, seeds)
    assert total == 30 and [s for _, s in todo] == [1] * 10 + [2] * 10 + [3] * 10


@pytest.mark.parametrize("argv", [["--confirm", "--only", "bahdanau"], ["--confirm", "--budget-steps", "9"],
                                  ["--confirm", "--convergence"], ["--confirm", "--data", "toy"],
                                  ["--out", "x/confirmation"]])
def test_confirm_refuses_what_would_change_its_plan(argv, capsys):
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert capsys.readouterr().err.count("\n") >= 1


def test_coverage_without_its_loss_differs_from_coverage_only_in_the_weight():
    configs = {c.name: c for c in study_configs("multi30k")}
    extra = set(configs["coverage-lambda0"].overrides) - set(configs["coverage"].overrides)
    assert extra == {"model.attention.coverage_loss_weight=0"}
    assert set(configs["coverage"].overrides) < set(configs["coverage-lambda0"].overrides)


def test_confirm_pairs_read_the_2017_files_and_only_those(tmp_path):
    second = write_multi30k_like(tmp_path / "m30")
    args = parse_args(["--data-path", str(tmp_path / "m30"), "--test-sentences", "5"])
    assert confirm_pairs(args) == second[:5]
    assert confirm_pairs(parse_args(["--data", "toy"])) is None            # the toy task has none
    (tmp_path / "m30" / f"{CONFIRM_SET}.en").unlink()
    assert confirm_pairs(args) is None


def test_every_run_scores_the_confirmation_set_too(tmp_path, cache_dir):
    """A tiny study on a Multi30k-shaped folder: the record holds test_2017's BLEU, chrF and
    AER (against the links given) apart from test_2016's; --records-only writes no report."""
    second = write_multi30k_like(tmp_path / "m30")
    links = tmp_path / "second.links"
    links.write_text("".join(" ".join(f"{i}-{j}" for i, j in sorted(toy_links(s, t))) + "\n"
                             for s, t in second), encoding="utf-8")
    out = tmp_path / "out" / "multi30k"
    result = run_cli("nmt_study", "--data-path", str(tmp_path / "m30"), "--budget-steps", "4", "--val-every", "2",
                     "--val-sentences", "5", "--test-sentences", "8", "--seeds", "1", "--only", "luong_general",
                     "--out", str(out), "--runs-dir", str(tmp_path / "runs"), "--cache-dir", str(cache_dir),
                     "--confirm-links", str(links), "--records-only", "data.vocab_size=60", timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    record = json.loads((out / "records" / "luong_general" / "seed1.json").read_text())
    confirm = record["confirm"]
    assert confirm["set"] == CONFIRM_SET and len(confirm["hypotheses"]) == 8
    assert confirm["eval"]["test_sentences"] == 8 and record["eval"]["test_sentences"] == 8
    assert 0.0 <= confirm["eval"]["test_bleu"] <= 100.0 and confirm["eval"]["test_chrf"] >= 0.0
    assert 0.0 <= confirm["eval"]["aer"] <= 1.0 and confirm["eval"]["aer_links"] > 0
    assert record["eval"]["stopped_by"] == "trainer.max_steps"
    assert not (out / "README.md").exists() and not (out.parent / "README.md").exists()


def fake_run(name: str, seed: int, bleu_2016: float, bleu_2017: float, stopped_by: str = "trainer.patience") -> dict:
    return {"name": name, "family": "x", "seed": seed, "first_seed": 1,
            "eval": {"test_bleu": bleu_2016, "stopped_by": stopped_by, "final_step": 2600},
            "confirm": {"test_bleu": bleu_2017}}


def test_the_confirmation_report_reads_each_comparison_on_both_sets():
    from nmt_study.confirmation_report import confirmation_lines, confirmed_summary, stopping_line

    spread = (-0.2, 0.0, 0.2)
    runs = [fake_run("luong_general", s, 29 + d, 25 + d) for s, d in enumerate(spread, 1)]
    runs += [fake_run("coverage", s, 35 + d, 28 + d) for s, d in enumerate(spread, 1)]        # both sets: +6, +3
    runs += [fake_run("bahdanau", s, 34 + d, 25 + 3 * d) for s, d in enumerate(spread, 1)]    # 2017: no gap
    runs += [fake_run("cosine", s, 33 + d, 22 + d, "trainer.max_steps" if s == 3 else "trainer.patience")
             for s, d in enumerate(spread, 1)]                                                  # 2017: the other way
    text = "\n".join(confirmation_lines(runs))
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines() if " vs luong_general |" in line}
    assert rows["coverage vs luong_general"].endswith("| **confirmed** |")
    # test_2016: +6.00 with sd 0.2 on each side; Welch t = 36.7 at df 4, p ~ 3.3e-06
    assert "| 3 / 3 | +6.00 [" in rows["coverage vs luong_general"]
    assert rows["bahdanau vs luong_general"].endswith("| **not confirmed** on test_2017 (no finding) |")
    assert rows["cosine vs luong_general"].endswith("| **reversed** on test_2017 |")
    assert rows["luong_concat vs luong_general"].endswith("| not run yet |")
    assert "12 of 30 planned runs finished; 11 stopped by early stopping (patience 4 validations), 1 at the cap " \
           "of 20,000 updates (cosine seed 3)." in text
    assert "Not every planned run of these rows has finished and stopped early" in text
    assert stopping_line(runs)[1] is False
    assert confirmed_summary(runs).startswith(
        "3 of 11 declared comparisons readable so far; confirmed on test_2017_flickr: 1 (coverage vs luong_general); "
        "not confirmed: 1 (bahdanau vs luong_general); reversed: 1 (cosine vs luong_general). 12 of 30 planned runs")


def test_the_index_reads_a_finished_confirmation_at_convergence():
    """Every planned run finished and stopped early: no "so far", and "at early stopping"."""
    from nmt_study.configs import CONFIRMATION
    from nmt_study.confirmation_report import confirmed_summary

    spread = (-0.2, 0.0, 0.2)
    runs = [fake_run(name, s, 30 + 5 * (name != "luong_general") + d, 25 + 5 * (name == "coverage") + d)
            for name in CONFIRMATION.rows for s, d in enumerate(spread, 1)]
    summary = confirmed_summary(runs)
    assert summary.startswith("11 of 11 declared comparisons readable; confirmed on test_2017_flickr at "
                              "early stopping: 1 (coverage vs luong_general); not confirmed: 4 ("), summary
    assert "30 of 30 planned runs finished; 30 stopped by early stopping" in summary
    capped = [{**r, "eval": {**r["eval"], "stopped_by": "trainer.max_steps"}} if r["name"] == "cosine" else r
              for r in runs]
    assert "confirmed on test_2017_flickr: 1 (coverage" in confirmed_summary(capped)     # not at early stopping


def test_a_test_2017_difference_after_no_finding_on_test_2016_says_which_way():
    """rotary vs sinusoidal: no finding on test_2016, then test_2017 differs; the claim is
    "rotary higher", so a negative gap there is against the claim and the reading says so."""
    from nmt_study.claims import CONFIRMATION_CLAIMS
    from nmt_study.confirmation_report import reading
    from nmt_study.findings import Checked
    from nmt_study.statistics import Comparison

    claim = next(c for c in CONFIRMATION_CLAIMS if c.expect == ">")
    def checked(gap, words):
        return Checked("a", "b", Comparison(gap, 0.01, gap - 1, gap + 1, 4.0, "welch"), words)

    quiet = checked(-0.46, "no finding")
    assert reading(claim, quiet, checked(-2.0, "differs")) == \
        "no finding on test_2016 (test_2017: differs against the claim)"
    assert reading(claim, quiet, checked(+2.0, "differs")) == "no finding on test_2016 (test_2017: differs as claimed)"
    assert reading(claim, quiet, checked(+2.0, "no finding")) == "no finding on test_2016 (test_2017: no finding)"
