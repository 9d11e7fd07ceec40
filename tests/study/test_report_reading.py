"""How the report reads the records: the head chosen on valid and scored on
test, censored updates as "k of n reached", the toy's guided rows ranked
apart, the seed plan, the convergence paragraph and the records' commits."""

import json

import pytest

from nmt_study.alignment import AerCounts
from nmt_study.configs import study_configs
from nmt_study.convergence import (NOT_CONFIRMED, at_cap, check_pointer_lines, convergence_lines, ordering_checks, paragraph,
                                   verdict)
from nmt_study.provenance import commit_lines, compare_records, equivalence_lines, reproduction_lines
from nmt_study.ranking import ranking_table, seed_plan_line
from nmt_study.readings import chosen_on_valid, derived
from nmt_study.report_header import rebuild_command, title
from nmt_study.tables import aggregate, cell


def counts(aer_hits: int) -> list[int]:
    """Counts of 10 predicted links against 10 reference links, `aer_hits` right: AER 1 - hits/10."""
    return AerCounts(10, 10, aer_hits, aer_hits, 10).to_list()


def test_the_head_is_chosen_on_valid_and_scored_on_test():
    # valid: head (0, 1) is best (9 of 10 right); test: head (1, 0) would be best (10 of 10)
    valid = [[counts(5), counts(9)], [counts(6), counts(7)]]
    test = [[counts(4), counts(6)], [counts(10), counts(3)]]
    evaluation = {"alignment": {"valid": {"counts": {}, "grids": {"heads": valid}},
                                "test": {"counts": {"shown": counts(5), "shift_shown": counts(8)},
                                         "grids": {"heads": test}, "target_words": 20,
                                         "unlinked_target_words": 5}}}
    assert chosen_on_valid(evaluation) == ((0, 1), pytest.approx(0.4))          # test AER of (0, 1): 1 - 6/10, not 0.0
    figures = derived(evaluation)
    assert figures["aer_head_valid"] == pytest.approx(0.4) and figures["head_valid_cell"] == [0, 1]
    assert figures["aer_shift"] == pytest.approx(0.2) and figures["precision"] == pytest.approx(0.5)
    assert figures["unlinked_share"] == 0.25
    assert "aer_head_valid_shift" not in figures                   # no shifted grids in this record
    assert chosen_on_valid({"alignment": {"test": {"grids": {"heads": test}}}}) is None


def run(name, seed, **figures):
    family = next(c.family for c in study_configs("toy") if c.name == name)
    return {"name": name, "family": family, "seed": seed, "first_seed": 1,
            "eval": {"final_step": 600, "target_bleu": 95.0, **figures}}


def test_censored_updates_are_k_of_n_reached_never_a_mean():
    runs = [run("bahdanau", 1, steps_to_target=250), run("bahdanau", 2, steps_to_target=None),
            run("bahdanau", 3, steps_to_target=300), run("lstmn", 1, steps_to_target=None)]
    table = aggregate(runs)
    assert cell(table["bahdanau"], "steps_to_target", "{:,.0f}") == "2 of 3 reached (at 250, 300)"
    assert cell(table["lstmn"], "steps_to_target", "{:,.0f}") == "0 of 1 reached"


def test_toy_guided_rows_are_ranked_apart():
    runs = [run(name, seed, aer=aer + seed / 100, test_bleu=100.0)
            for name, aer in (("luong_general-guided", 0.0), ("bahdanau", 0.3), ("luong_dot", 0.5),
                              ("transformer-sinusoidal-guided", 0.05))
            for seed in (1, 2)]
    configs, table = study_configs("toy"), aggregate(runs)
    rnn = "\n".join(ranking_table(configs, table, toy=True, transformers=False))
    guided = ranking_table(configs, table, toy=True, transformers=False, guided=True)
    assert "guided" not in rnn and "| 1 | bahdanau |" in rnn
    assert [line.split(" | ")[1] for line in guided[2:]] == ["luong_general-guided", "transformer-sinusoidal-guided"]


def test_the_seed_plan_line_names_the_rows_short_of_their_seeds():
    runs = [run("bahdanau", s, test_bleu=30.0) for s in (1, 2, 3)] + [run("lstmn", 1, test_bleu=20.0)]
    line = seed_plan_line(study_configs("multi30k"), aggregate(runs), "multi30k")
    assert line.startswith("Seeds, fixed before any run: 3 seeds for every configuration, 5 for the base")
    assert line.endswith("Still short of their plan: bahdanau (3 of 5), lstmn (1 of 3).")


def test_the_convergence_checks_own_report_reads_as_the_check():
    # its folder, not a flag, marks it: python -m nmt_study --convergence always writes OUT/../convergence
    settings = {"data": "multi30k", "data_path": "/data", "links": "test.links"}
    assert title(settings, "bench/convergence").startswith("the convergence check")
    assert title(settings, "bench/multi30k") == "part 2, Multi30k de→en"
    assert rebuild_command(settings, "bench/convergence").startswith(
        "python -m nmt_study --report-only --convergence --data multi30k --out bench/convergence")
    assert "--convergence" not in rebuild_command(settings, "bench/multi30k")
    runs = [run("bahdanau", 1, test_bleu=36.0)]
    line = seed_plan_line(study_configs("multi30k"), aggregate(runs), "convergence")
    assert line == ("Seeds, fixed before any run: 2 seeds for each row of the convergence check. "
                    "Still short of their plan: bahdanau (1 of 2).")
    # the check is read against the grid in the grid's report, never against its own runs
    assert "../multi30k/README.md#convergence-check" in check_pointer_lines()[-1]


def bleu_runs(values: dict[str, list[float]]) -> list[dict]:
    return [{"name": n, "family": "x", "seed": s, "eval": {"test_bleu": b, "final_step": 1}}
            for n, found in values.items() for s, b in enumerate(found, 1)]


def test_the_convergence_paragraph_says_which_of_the_grids_findings_hold():
    # grid: bahdanau and coverage far above luong_general, bahdanau vs coverage within noise
    grid = aggregate(bleu_runs({"bahdanau": [35.0, 35.2, 35.1], "luong_general": [28.0, 28.4, 28.2],
                                "coverage": [34.0, 35.0, 36.0]}))
    # at early stopping: bahdanau still far above luong_general; coverage vs luong_general within noise
    converged = aggregate(bleu_runs({"bahdanau": [38.0, 38.1], "luong_general": [36.0, 36.1],
                                     "coverage": [37.0, 39.0]}))
    rnn = {"bahdanau": False, "luong_general": False, "coverage": False}
    checks = ordering_checks(grid, converged, ["luong_general", "bahdanau", "coverage"], rnn)
    assert [(c.first, c.second, c.grid_reading, c.converged_reading) for c in checks] == [
        ("bahdanau", "luong_general", "differs", "differs"), ("coverage", "luong_general", "differs", "no finding"),
        ("bahdanau", "coverage", "no finding", "no finding")]
    # bahdanau - luong_general at early stopping: gap 2.00, both spreads 0.0707, t = 28.3 on 2 df
    assert checks[0].converged.gap == pytest.approx(2.0) and checks[0].converged.df == pytest.approx(2.0)
    assert checks[0].converged.p == pytest.approx(0.001248, rel=1e-3)
    assert [verdict(c) for c in checks] == ["holds", NOT_CONFIRMED, "is a finding neither in the grid nor at early stopping"]
    text = paragraph(checks)
    assert "bahdanau above luong_general holds (grid +6.90 [" in text
    assert "; at early stopping +2.00 [+1.70, +2.30], p = 0.00125)" in text
    # coverage - luong_general at early stopping: +1.95, same sign as the grid's, 1 df: not significant
    assert ("coverage above luong_general is not confirmed at early stopping (no finding there: the gap keeps the "
            "grid's direction but is not significant after Holm's correction) (grid +6.80 [") in text
    assert text.endswith("The grid's findings among these rows that hold at early stopping: bahdanau above "
                         "luong_general; that are not confirmed there (no finding at early stopping): coverage above "
                         "luong_general.")
    assert paragraph([]).startswith("No ordering to check yet")
    # coverage 36.00 against luong_general 36.05 at early stopping: the gap turns, within noise
    turned = ordering_checks(grid, aggregate(bleu_runs({"coverage": [35.0, 37.0], "luong_general": [36.0, 36.1]})),
                             ["luong_general", "coverage"], rnn)
    assert verdict(turned[0]) == NOT_CONFIRMED
    assert ("coverage above luong_general is not confirmed at early stopping (no finding there: the gap points the "
            "other way, within noise) (grid +6.80 [") in paragraph(turned)
    # one converged seed: the ordering is named, and said to be untested
    single = ordering_checks(grid, aggregate(bleu_runs({"bahdanau": [38.0], "luong_general": [36.0]})),
                             ["luong_general", "bahdanau"], rnn)
    assert ("bahdanau above luong_general cannot be tested yet (fewer than 2 seeds on a side in the convergence "
            "check) (grid +6.90 [") in paragraph(single)
    assert paragraph(single).endswith("The grid's findings among these rows that cannot be tested there yet: "
                                      "bahdanau above luong_general.")
    # a reversal, and a gap that only the check finds
    flipped = ordering_checks(aggregate(bleu_runs({"bahdanau": [35.0, 35.2], "luong_general": [30.0, 30.2]})),
                              aggregate(bleu_runs({"bahdanau": [36.0, 36.1], "luong_general": [38.0, 38.1]})),
                              ["bahdanau", "luong_general"], rnn)
    assert verdict(flipped[0]) == "reverses"
    assert paragraph(flipped).endswith("The grid's findings among these rows that reverse there: bahdanau above "
                                       "luong_general.")
    quiet_grid = aggregate(bleu_runs({"bahdanau": [35.0, 30.0], "coverage": [34.0, 31.0]}))
    clear_end = aggregate(bleu_runs({"bahdanau": [38.0, 38.1], "coverage": [36.0, 36.1]}))
    found_later = ordering_checks(quiet_grid, clear_end, ["bahdanau", "coverage"], rnn)
    assert verdict(found_later[0]) == ("was no finding in the grid; at early stopping bahdanau is ahead (a finding "
                                       "of the check alone)")
    assert paragraph(found_later).endswith("None of these orderings is a finding of the grid, so none can be said "
                                           "to hold or fail at early stopping.")


def test_the_convergence_section_without_records_says_not_run_yet(tmp_path):
    lines = convergence_lines(tmp_path / "multi30k", {})
    assert lines[-1] == "Not run yet: no finished record in ../convergence/records."


def test_records_from_another_commit_are_flagged_and_reruns_compared(tmp_path):
    runs = [{"name": "bahdanau", "seed": s, "eval": {}, "commit": c}
            for s, c in ((1, "d459c95f0ae4"), (2, "d459c95f0ae4"), (3, "abc (with uncommitted changes under nmt/ or configs/)"))]
    text = "\n".join(commit_lines(runs))
    assert "`d459c95f0ae4`: 2 records" in text
    assert "Not from `d459c95f0ae4`: bahdanau seed 3 (`abc (with uncommitted" in text
    original = {"eval": {"test_bleu": 30.0, "aer": 0.3, "best_step": 400}, "commit": "a"}
    assert [ok for *_, ok in compare_records(original, {"eval": {"test_bleu": 30.004, "aer": 0.3004,
                                                                  "best_step": 400}})] == [True, True, True]
    assert not compare_records(original, {"eval": {"test_bleu": 30.0, "aer": 0.3, "best_step": 200}})[0][3]
    for folder, record in ((tmp_path, original), (tmp_path / "reproduce", {**original, "status": "finished",
                                                                         "commit": "b"})):
        path = folder / "records" / "bahdanau" / "seed1.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(record))
    assert reproduction_lines(tmp_path)[-1] == "| bahdanau | 1 | `a` | `b` | reproduces: best_step 400, test_bleu 30, aer 0.3 |"


def test_a_rerun_on_another_processor_is_not_read_as_a_difference(tmp_path):
    """Bit-identity holds on the original's processor only: a rerun elsewhere gets a
    row that says so and how far each figure moved; --reproduce keeps a rerun made on
    this processor or on the original's, and trains any other again."""
    from nmt_study.provenance import rerun_done

    intel, amd = "Intel Xeon, avx512", "AMD EPYC, avx2"
    original = {"eval": {"test_bleu": 30.0, "aer": 0.3, "best_step": 400}, "commit": "a", "cpu": intel}
    rerun = {"eval": {"test_bleu": 29.5, "aer": 0.31, "best_step": 400}, "commit": "b", "cpu": amd,
             "status": "finished"}
    for folder, record in ((tmp_path, original), (tmp_path / "reproduce", rerun)):
        path = folder / "records" / "bahdanau" / "seed1.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(record))
    assert reproduction_lines(tmp_path)[-1] == (
        "| bahdanau | 1 | `a` | `b` | another processor (AMD EPYC, avx2; the original: Intel Xeon, avx512), "
        "not comparable bit for bit: best_step 400 → 400, test_bleu 30 → 29.5, aer 0.3 → 0.31 |")
    assert rerun_done(rerun, original, "b", amd)                    # made here: kept
    assert rerun_done({**rerun, "cpu": intel}, original, "b", amd)  # on the original's processor: kept
    assert not rerun_done(rerun, original, "b", intel)             # on the original's processor now: again
    assert not rerun_done(rerun, original, "c", amd)               # another commit
    assert not rerun_done({**rerun, "status": "failed"}, original, "b", amd)
    assert not rerun_done(None, original, "b", amd)


def test_every_aer_table_gets_the_baselines_under_it():
    from nmt_study.alignment_table import baseline_note
    from nmt_study.baselines import baseline_counts

    # one pair, 3 source and 3 target words, reference links 0-0, 2-1, 1-2:
    # diagonal 0-0 1-1 2-2 hits one of 3 (AER 1 - 2/6); same position the same; the floor all 3
    found = baseline_counts([("a b c", "x y z")], [{(0, 0), (2, 1), (1, 2)}])
    assert baseline_note(found) == ("AER of alignments that read no model, on the same test links: diagonal "
                                    "0.667, same position 0.667; one link per target word cannot go below 0.000.")
    assert baseline_note({}) == ""


def test_the_convergence_section_draws_its_curves_from_the_records(tmp_path):
    for name, bleus in (("bahdanau", (38.0, 38.1)), ("luong_general", (36.0, 36.1))):
        for seed, bleu in enumerate(bleus, 1):
            path = tmp_path / "convergence" / "records" / name / f"seed{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            curve = [{"step": s, "bleu": bleu * s / 4000, "train_seconds": s} for s in (1000, 2000, 4000)]
            final = 4800 if (name, seed) == ("bahdanau", 2) else 4600       # one run ends at the cap
            path.write_text(json.dumps({"status": "finished", "records": curve, "common": ["trainer.max_steps=4800", "trainer.patience=4",
                                                                       "trainer.val_every=200"],
                                        "eval": {"test_bleu": bleu, "best_step": 4200 if final == 4800 else 4000,
                                                 "final_step": final,
                                                 "wall_s": 100.0}}))
    grid = aggregate(bleu_runs({"bahdanau": [35.0, 35.2], "luong_general": [28.0, 28.4]}))
    (tmp_path / "multi30k").mkdir()
    lines = convergence_lines(tmp_path / "multi30k", grid)
    assert "| bahdanau | 2 | 35.10 ± 0.14 | 38.05 ± 0.07 | 4000, 4200 | 4600, 4800 (cap) |" in lines
    assert ("1 of 4 runs ended at the update cap with early stopping's patience not yet spent: bahdanau seed 2 "
            "(best update 4200 of 4800).") in "".join(lines)
    # patience spent on the cap's own validation (4 x 200 updates without a gain): early stopping ended it too
    both = {"common": ["trainer.max_steps=4800", "trainer.patience=4", "trainer.val_every=200"],
            "eval": {"best_step": 4000, "final_step": 4800}}
    assert not at_cap(both) and at_cap({**both, "eval": {"best_step": 4200, "final_step": 4800}})
    assert "| coverage | 0 | – | not run yet | – | – |" in lines
    assert (tmp_path / "multi30k" / "curves_convergence.png").read_bytes()[:4] == b"\x89PNG"
    assert lines[-1].startswith("Each pair's gap in test BLEU") and "that hold at early stopping: bahdanau above" in lines[-1]


def test_records_trained_later_say_why_and_the_equivalence_checks_are_read(tmp_path):
    runs = [{"name": n, "seed": 1, "eval": {}, "commit": c}
            for n, c in (("bahdanau", "d459c95f0ae4"), ("luong_dot", "d459c95f0ae4"), ("bahdanau-guided", "619a12a92ec6"))]
    text = "\n".join(commit_lines(runs))
    assert "Not from `d459c95f0ae4`: bahdanau-guided seed 1 (`619a12a92ec6`). Why: bahdanau-guided was trained " \
           "at a later commit than the other rows'" in text       # 619a12a (11-26 09:23) after d459c95 (05:31)
    assert equivalence_lines(tmp_path) == []
    folder = tmp_path / "commit_equivalence"
    folder.mkdir()
    run = {"resolved": "d459c95f0ae4", "same_weights_as_first": True, "same_validation_as_first": True,
           "validation": {"bleu": 7.4272}}
    check = {"record": "bahdanau-guided", "seed": 1, "steps": 200, "cpu": "AMD EPYC", "date": "2026-11-28 09:00 UTC",
             "all_equal": True, "runs": [run, {**run, "resolved": "619a12a92ec6"}]}
    (folder / "bahdanau-guided_seed1_200.json").write_text(json.dumps(check))
    (folder / "lstmn_seed1_200.json").write_text(json.dumps(
        {**check, "record": "lstmn", "all_equal": False,
         "runs": [run, {**run, "resolved": "4685c12aaaaa", "same_weights_as_first": False}]}))
    lines = equivalence_lines(tmp_path)
    assert lines[1] == "## Commit equivalence"
    assert lines[-2] == ("- bahdanau-guided seed 1, 200 updates, at `d459c95f0ae4`, `619a12a92ec6` (AMD EPYC, "
                         "2026-11-28 09:00 UTC): **equal weights and validation at every commit** (validation BLEU 7.43).")
    assert "**differs at `4685c12aaaaa`**" in lines[-1]
