"""The papers' claims as data, rendered against a small table of fake records:
exact Welch p, Holm within each claim (its declared family), the decision in words."""

import pytest

from nmt_study.claims import CLAIMS, CONFIRMATION_CLAIMS, Claim
from nmt_study.configs import study_configs
from nmt_study.findings import check_section, declared, findings, render_claim, split_row, verdict
from nmt_study.papers import PAPERS
from nmt_study.tables import against, aggregate


def runs_of(values: dict[str, list[float]], key: str = "aer") -> list[dict]:
    return [{"name": name, "family": "x", "seed": seed, "first_seed": 1, "eval": {key: v, "final_step": 300}}
            for name, found in values.items() for seed, v in enumerate(found, 1)]


def test_every_claim_names_a_known_paper_its_source_and_a_relation():
    for claim in CLAIMS:
        assert claim.paper in PAPERS and claim.where and claim.pairs
        assert claim.expect in ("<", ">", "=", ">=", "")
    cited = {claim.paper for claim in CLAIMS}
    assert {"luong2015", "britz2017", "guided_rnn", "garg2019", "koehn2017", "chen2020"} <= cited
    luong = [c for c in CLAIMS if c.paper == "luong2015" and c.where.startswith("Table 6")]
    assert ("luong_general-local_m", "luong_general-local_p") in luong[0].pairs and luong[0].expect == "<"
    assert "Garg" not in PAPERS["guided_rnn"].cite and "no translation" in PAPERS["sparse"].setting


def test_a_section_is_corrected_together_and_a_weak_gap_is_no_finding():
    table = aggregate(runs_of({"a": [0.10, 0.12, 0.11], "b": [0.60, 0.62, 0.64],
                               "c": [0.50, 0.58, 0.66], "d": [0.40, 0.50, 0.45]}))
    claims = [Claim("luong2015", "Table 6", "a aligns best", "aer", (("a", "b"),), "<"),
              Claim("luong2015", "Table 6", "c below d", "aer", (("c", "d"),), "<")]
    strong, weak = check_section(claims, table)
    # a vs b: mean 0.110 (sd 0.010) against 0.620 (sd 0.020): t = -39.5 at df 2.94, p = 4.2e-05
    assert strong[0].comparison.p == pytest.approx(4.2e-05, rel=0.05) and strong[0].reading == "differs"
    # c vs d: 0.58 (sd 0.08) against 0.45 (sd 0.05): se = sqrt(0.0064/3 + 0.0025/3) = 0.0545,
    # t = 2.387 at Welch df 3.36, p = 0.0879: above Holm's 0.05 / 1 for the larger p -> no finding
    assert weak[0].comparison.p == pytest.approx(0.0879, abs=5e-4) and weak[0].reading == "no finding"
    lines = render_claim(claims[1], weak, table)
    assert lines[0] == "- Table 6: c below d. AER; the paper: the first row lower."
    assert lines[1].startswith("  - c 0.580 ± 0.080 (3 seeds) vs d 0.450 ± 0.050 (3 seeds): gap +0.130 [")
    assert lines[1].endswith("Welch p = 0.0879: per claim **no finding**; per paper (declared first) **no finding**")
    assert render_claim(claims[0], strong, table)[1].endswith(
        "Welch p = 4.2e-05: per claim **agrees: a lower**; per paper (declared first) **agrees: a lower**")


def test_both_groupings_are_read_and_a_decision_that_depends_on_them_is_listed():
    from nmt_study.findings import check_pooled, grouping_changes

    # two claims of one paper, each pair: gap 0.5, both sds 0.2, 3 seeds: se = sqrt(2 * 0.04 / 3) = 0.163,
    # t = 3.06 at 4 df, p = 0.0375. Per claim (a family of one) each survives Holm (0.0375 < 0.05); as the
    # paper's one family of two, the smaller p must beat 0.05 / 2 = 0.025: neither survives
    table = aggregate(runs_of({"a": [30.0, 30.4, 30.2], "b": [29.5, 29.9, 29.7],
                               "c": [31.0, 31.4, 31.2], "d": [30.5, 30.9, 30.7]}, key="test_bleu"))
    claims = (Claim("luong2015", "Table 6", "a above b", "test_bleu", (("a", "b"),), ">", ("toy",)),
              Claim("luong2015", "Table 6", "c above d", "test_bleu", (("c", "d"),), ">", ("toy",)))
    per_claim, pooled = check_section(list(claims), table), check_pooled(list(claims), table)
    assert per_claim[0][0].comparison.p == pytest.approx(0.0375, abs=1e-3)
    assert [g[0].reading for g in per_claim] == ["differs", "differs"]
    assert [g[0].reading for g in pooled] == ["no finding", "no finding"]
    changed = grouping_changes(table, "toy", claims)
    assert [(c.a, c.b, now, then) for _, c, now, then in changed] == [
        ("a", "b", "agrees: a higher", "no finding"), ("c", "d", "agrees: c higher", "no finding")]
    line = render_claim(claims[0], per_claim[0], table, pooled[0])[1]
    assert line.endswith("per claim **agrees: a higher**; per paper (declared first) **no finding**")


def test_holm_runs_within_a_claim_and_a_claims_decision_never_moves_with_its_section():
    # p ~ 0.03 alone survives; with four more comparisons of p ~ 1 in its own claim it does not;
    # the same four in another claim of the same section leave it as it was (one family per claim)
    close = {"a": [30.0, 30.4, 30.2], "b": [29.5, 29.9, 29.7]}
    alone = check_section([Claim("britz2017", "Sec. 4.5", "a above b", "test_bleu", (("a", "b"),), ">")],
                          aggregate(runs_of(close, "test_bleu")))
    assert alone[0][0].comparison.p < 0.05 and alone[0][0].reading == "differs"
    many = aggregate(runs_of({**close, **{f"x{i}": [30.0, 30.4, 30.2] for i in range(4)}}, "test_bleu"))
    others = tuple((f"x{i}", "a") for i in range(4))
    one_family = check_section([Claim("britz2017", "Sec. 4.5", "a above b", "test_bleu", (("a", "b"), *others),
                                      ">")], many)
    assert one_family[0][0].reading == "no finding"
    claims = [Claim("britz2017", "Sec. 4.5", "a above b", "test_bleu", (("a", "b"),), ">"),
              Claim("britz2017", "Sec. 4.5", "x equal a", "test_bleu", others, "=")]
    checked = check_section(claims, many)
    assert checked[0][0].reading == "differs"
    assert verdict("=", checked[1][0]) == ("no finding (no difference shown, as the paper reports; "
                                           "not a proof of equality)")


def test_no_comparison_is_in_two_claims_and_no_claim_mixes_rnn_and_transformer():
    transformer = {c.name: c.transformer for part in ("toy", "multi30k") for c in study_configs(part)}
    seen = {}
    for claim in (*CLAIMS, *CONFIRMATION_CLAIMS):
        rows = {split_row(row, claim.measure)[0] for pair in claim.pairs for row in pair}
        assert len({transformer[r] for r in rows}) == 1, claim.says
        for part in claim.parts:
            for a, b in claim.pairs:
                test = (part, *sorted([split_row(a, claim.measure), split_row(b, claim.measure)]))
                assert test not in seen, f"{test} is in two claims: {seen.get(test)} and {claim.says}"
                seen[test] = claim.says


def test_a_table_shows_a_claimed_comparison_with_its_claims_decision():
    # a vs b alone in its claim: differs (p ~ 0.03). The table against b holds four more rows
    # of p ~ 1: tested there it would be "no finding"; the table shows the claim's decision.
    values = {"a": [30.0, 30.4, 30.2], "b": [29.5, 29.9, 29.7], **{f"x{i}": [29.5, 29.9, 29.7] for i in range(4)}}
    table = aggregate(runs_of(values, "test_bleu"))
    claim = Claim("britz2017", "Sec. 4.5", "a above b", "test_bleu", (("a", "b"),), ">", ("multi30k",))
    claimed = declared(table, "multi30k", (claim,))
    assert claimed[("a", "b", "test_bleu")][0] == claimed[("b", "a", "test_bleu")][0] == "differs"
    shown = against(table, list(values), "b", "test_bleu", declared=claimed)
    assert shown["a"].endswith(": differs (claim: britz2017, Sec. 4.5)")
    assert all(shown[f"x{i}"].endswith(": equal, no spread") or "no finding" in shown[f"x{i}"] for i in range(4))
    assert against(table, ["a", "b"], "b", "test_bleu")["a"].endswith(": differs")
    untested = against(table, list(values), "b", "test_bleu")     # no claim: one table, one family
    assert "no finding" in untested["a"]


def test_zero_spread_is_described_never_tested_and_missing_rows_say_so():
    table = aggregate(runs_of({"a": [100.0, 100.0], "b": [100.0, 100.0], "c": [90.0, 90.0]}, "test_bleu"))
    claim = Claim("shaw2018", "Table 1", "a above b", "test_bleu", (("a", "b"), ("c", "a"), ("a", "zzz")), ">")
    equal, unequal, missing = check_section([claim], table)[0]
    assert verdict(">", equal) == "equal, every seed the same (described, not tested)"
    assert verdict(">", unequal) == "unequal without spread, c lower (described, not tested)"
    assert verdict(">", missing) == "not run yet"
    assert "zzz (not run)" in render_claim(claim, [equal, unequal, missing], table)[3]


def test_a_disagreement_and_a_row_read_one_step_later():
    runs = runs_of({"x": [0.30, 0.31, 0.32]})
    for run, shifted in zip(runs, (0.60, 0.62, 0.61)):
        run["eval"]["aer_shift"] = shifted
    claim = Claim("chen2020", "Sec. 3", "read later aligns better", "aer", (("x@aer_shift", "x"),), "<")
    [[checked]] = check_section([claim], aggregate(runs))
    assert verdict("<", checked) == "disagrees: x@aer_shift higher"
    assert render_claim(claim, [checked], aggregate(runs))[1].startswith("  - x [aer_shift] 0.610 ± 0.010 (3 seeds)")


def test_findings_render_every_paper_with_its_setting():
    table = aggregate(runs_of({"luong_general-local_m": [0.2, 0.21, 0.22], "luong_general": [0.5, 0.52, 0.51]}))
    text = "\n".join(findings(table, "multi30k"))
    assert "#### Luong, Pham & Manning 2015" in text and "Their setting: WMT'14 English→German" in text
    assert "#### Ghader & Monz 2017" in text and "No comparison of rows tests this paper." in text
    assert "#### Koehn & Knowles 2017, Six Challenges for Neural Machine Translation, WNMT\n" in text
    assert "luong_general-local_m 0.210 ± 0.010 (3 seeds) vs luong_general 0.510 ± 0.010 (3 seeds)" in text
    assert findings({}, "toy") == ["The toy part has no finished runs yet."]


def test_a_claim_not_read_on_a_part_shows_its_figures_withholds_its_decision_and_keeps_its_families():
    from nmt_study.findings import check_pooled, declared, grouping_changes

    # the same numbers as the groupings test: per claim each pair survives (p 0.0375), per paper neither
    table = aggregate(runs_of({"a": [30.0, 30.4, 30.2], "b": [29.5, 29.9, 29.7],
                               "c": [31.0, 31.4, 31.2], "d": [30.5, 30.9, 30.7]}, key="test_bleu"))
    claims = (Claim("luong2015", "Table 6", "a above b", "test_bleu", (("a", "b"),), ">", ("toy",),
                    not_read=(("toy", "the toy task cannot test it"),)),
              Claim("luong2015", "Table 6", "c above d", "test_bleu", (("c", "d"),), ">", ("toy",)))
    per_claim, pooled = check_section(list(claims), table), check_pooled(list(claims), table)
    # the withheld claim still counts in the paper's family: c vs d stays "no finding" per paper
    assert [g[0].reading for g in pooled] == ["no finding", "no finding"]
    lines = render_claim(claims[0], per_claim[0], table, pooled[0], "toy")
    assert lines[0].endswith("*Not read on this part* (decided 2026-12-02, after the results): "
                             "the toy task cannot test it.")
    assert "gap +0.50" in lines[1] and lines[1].endswith(
        "per claim **not read (see above)**; per paper (declared first) **not read (see above)**")
    # on a part where it is read, the decision is given as before
    assert render_claim(claims[0], per_claim[0], table, pooled[0], "multi30k")[1].endswith(
        "per claim **agrees: a higher**; per paper (declared first) **no finding**")
    assert [c.a for _, c, _, _ in grouping_changes(table, "toy", claims)] == ["c"]
    assert declared(table, "toy", claims)[("a", "b", "test_bleu")][0] == "not read"


def test_the_claims_that_their_part_cannot_test_are_withheld_there():
    from nmt_study.claims import CLAIMS, LOCAL_M

    withheld = {(c.says[:40], part) for c in CLAIMS for part, _ in c.not_read}
    local_m = [c for c in CLAIMS if any(LOCAL_M in pair[0] for pair in c.pairs)]
    assert local_m and all(dict(c.not_read).get("toy") for c in local_m)
    guided_aer = [c for c in CLAIMS if c.measure == "aer" and any("-guided" in a for a, _ in c.pairs)]
    assert guided_aer and all(dict(c.not_read).get("multi30k") for c in guided_aer)
    assert len(withheld) == len(local_m) + len(guided_aer)
