"""The index's findings are built from the rows they cite."""

import pytest

from nmt.study.index import compare, findings
from nmt.study.tables import aggregate


def runs_of(values: dict[str, list[float]]) -> list[dict]:
    return [{"name": name, "family": "x", "seed": seed, "first_seed": 1,
             "eval": {"aer": aer, "test_bleu": 100.0, "final_step": 300, "steps_to_target": 200,
                      "target_bleu": 95.0}}
            for name, aers in values.items() for seed, aer in enumerate(aers, 1)]


def test_compare_ranks_only_where_welchs_test_does():
    table = aggregate(runs_of({"a": [0.10, 0.12, 0.11], "b": [0.60, 0.62, 0.64], "c": [0.58, 0.70, 0.50]}))
    line, better = compare(table, "a", "b", "aer", lower_is_better=True)
    # a: mean 0.110, sd 0.010; b: mean 0.620, sd 0.020: se = sqrt(0.01²/3 + 0.02²/3) = 0.0129,
    # t = -0.51 / 0.0129 = -39.5 at Welch df = 2.94: exact two-sided p = 4.2e-05
    assert better == "a" and line == ("a 0.110 ± 0.010 (3 seeds) vs b 0.620 ± 0.020 (3 seeds): "
                                      "a clearly better (Welch p = 4.2e-05)")
    # b and c: gap 0.027 against se = sqrt(0.02²/3 + 0.1²/3) = 0.059: p = 0.694, no finding
    line, better = compare(table, "b", "c", "aer", lower_is_better=True)
    assert better is None and line.endswith("no finding (Welch p = 0.694)")
    assert compare(table, "a", "zzz", "aer", True) == ("a vs zzz: not both run", None)


def test_guided_alignment_finding_says_by_how_much():
    runs = runs_of({"luong_general": [0.60, 0.62, 0.64], "luong_general-guided": [0.10, 0.12, 0.11]})
    text = "\n".join(findings(aggregate(runs), runs))
    # 0.110 - 0.620 = -0.510
    assert "changes the AER by -0.510 (from 0.620 to 0.110)" in text
    assert "luong_general-guided clearly better" in text
    assert "Part 2 (Multi30k) checks the same claims" in text


@pytest.mark.parametrize("missing", ["luong_general", "luong_general-guided"])
def test_findings_without_a_row_say_so(missing):
    runs = runs_of({name: [0.5, 0.6] for name in ("luong_general", "luong_general-guided") if name != missing})
    assert "not run yet" in "\n".join(findings(aggregate(runs), runs))


def test_coverage_penalty_finding_compares_the_same_checkpoints_decoded_twice():
    bleu = {"bahdanau": [30.0, 31.0, 32.0], "bahdanau-beam5": [31.0, 32.0, 33.0],
            "bahdanau-beam5-cp0.2": [33.0, 34.0, 35.0]}
    runs = [{"name": name, "family": "x", "seed": seed, "first_seed": 1,
             "eval": {"test_bleu": b, "test_chrf": b + 20, "final_step": 300}}
            for name, values in bleu.items() for seed, b in enumerate(values, 1)]
    text = "\n".join(findings(aggregate(runs), runs))
    assert "### Coverage penalty in beam search (Wu et al. 2016, Sec. 7; β = 0.2, beam 5, decode only)" in text
    # 34 ± 1 against 32 ± 1: se = sqrt(1/3 + 1/3) = 0.816, t = 2.449 at Welch df 4: p = 0.0705,
    # no finding
    assert ("bahdanau-beam5-cp0.2 34.00 ± 1.00 (3 seeds) vs bahdanau-beam5 32.00 ± 1.00 (3 seeds): "
            "no finding (Welch p = 0.0705)") in text
    assert "bahdanau-beam5 32.00 ± 1.00 (3 seeds) vs bahdanau 31.00 ± 1.00 (3 seeds)" in text
    assert "bahdanau-beam5-cp0.2 54.00 ± 1.00 (3 seeds) vs bahdanau-beam5 52.00 ± 1.00 (3 seeds)" in text  # chrF
    assert "AER: unchanged by construction" in text
