"""The papers' claims (nmt_study.claims) read against one part's records.

Each comparison is Welch's test over the seeds with its exact p and the
95% interval of the gap; Holm's correction runs over the comparisons of one
claim (the grouping since aafbdd3) and, printed beside it, over every
comparison of one paper on one part (the grouping declared first; see
nmt_study.claims for the history) (nmt_study.statistics). The
decision is in plain words: "agrees" or "disagrees" only where the gap
survives Holm; "no finding" where it does not; rows whose seeds all gave
one value are described as equal or unequal, never tested. The paired
bootstrap of first seeds decides nothing here.
"""

import statistics
from dataclasses import dataclass

from nmt_study.claims import CLAIMS, Claim
from nmt_study.papers import PAPERS
from nmt_study.statistics import Comparison, decide, welch

DIGITS = {"test_bleu": 2, "test_chrf": 2}
EXPECTED = {"<": "the paper: the first row lower", ">": "the paper: the first row higher",
            "=": "the paper: no difference", ">=": "the paper: the first row as high or higher",
            "": "no claim of the paper: the study's own comparison"}
MEASURES = {"aer": "AER", "test_bleu": "test BLEU", "entropy": "attention entropy",
            "aer_head_valid": "AER of the head chosen on valid", "test_chrf": "chrF"}


@dataclass(frozen=True)
class Checked:
    """One (a, b) comparison of a claim and its corrected reading."""
    a: str
    b: str
    comparison: Comparison | None      # None: a row has no runs
    reading: str                       # statistics.decide's words, or "not run yet"


def split_row(row: str, measure: str) -> tuple[str, str]:
    """NAME or NAME@KEY -> (configuration, record key)."""
    name, _, key = row.partition("@")
    return name, key or measure


def values(table: dict, row: str, measure: str) -> list[float]:
    name, key = split_row(row, measure)
    return list(table.get(name, {}).get("values", {}).get(key, []))


def check_claim(claim: Claim, table: dict) -> list[Checked]:
    """One claim's comparisons, Holm-corrected together (the claim is their family)."""
    compared = {}
    for a, b in claim.pairs:
        va, vb = values(table, a, claim.measure), values(table, b, claim.measure)
        if va and vb:
            compared[(a, b)] = welch(va, vb)
    readings = dict(zip(compared, decide(list(compared.values()))))
    return [Checked(a, b, compared.get((a, b)), readings.get((a, b), "not run yet")) for a, b in claim.pairs]


def check_section(claims: list[Claim], table: dict) -> list[list[Checked]]:
    """Per claim of one section its checks, each claim Holm-corrected on its own."""
    return [check_claim(claim, table) for claim in claims]


def check_pooled(claims: list[Claim], table: dict) -> list[list[Checked]]:
    """The grouping declared first: every comparison of one paper's claims on one
    part, Holm-corrected together -> per claim its checks."""
    flat = [(k, a, b) for k, claim in enumerate(claims) for a, b in claim.pairs]
    compared = {}
    for k, a, b in flat:
        va, vb = values(table, a, claims[k].measure), values(table, b, claims[k].measure)
        if va and vb:
            compared[(k, a, b)] = welch(va, vb)
    readings = dict(zip(compared, decide(list(compared.values()))))
    return [[Checked(a, b, compared.get((k, a, b)), readings.get((k, a, b), "not run yet"))
             for a, b in claim.pairs] for k, claim in enumerate(claims)]


def grouping_changes(table: dict, part: str, claims=CLAIMS) -> list[tuple[Claim, Checked, str, str]]:
    """Every comparison whose decision differs between the two groupings ->
    (claim, its check, decision per claim, decision per paper)."""
    changed = []
    for mine in sections(part, claims).values():
        for claim, group, pooled in zip(mine, check_section(mine, table), check_pooled(mine, table)):
            if part in dict(claim.not_read):
                continue
            for checked, first in zip(group, pooled):
                now, then = verdict(claim.expect, checked), verdict(claim.expect, first)
                if now != then:
                    changed.append((claim, checked, now, then))
    return changed


def declared(table: dict, part: str, claims=CLAIMS) -> dict[tuple[str, str, str], tuple[str, Claim]]:
    """Every comparison a claim of `part` declares, keyed (a, b, record key) in both
    orders -> (its Holm reading within the claim, the claim): what another table
    shows for that comparison instead of testing it again ("not read" where the
    claim cannot be read on `part`)."""
    found = {}
    for claim in claims:
        if part not in claim.parts:
            continue
        withheld = part in dict(claim.not_read)
        for checked in check_claim(claim, table):
            (a, key_a), (b, key_b) = split_row(checked.a, claim.measure), split_row(checked.b, claim.measure)
            if key_a == key_b and checked.comparison is not None:
                found[(a, b, key_a)] = found[(b, a, key_a)] = ("not read" if withheld else checked.reading, claim)
    return found


def verdict(expect: str, checked: Checked) -> str:
    """The decision on one comparison, in plain words."""
    c, reading = checked.comparison, checked.reading
    if c is None or reading in ("not run yet", "too few seeds"):
        return "too few seeds to test" if reading == "too few seeds" else "not run yet"
    direction = "<" if c.gap < 0 else ">"
    side = f"{checked.a} {'lower' if direction == '<' else 'higher'}"
    if reading.endswith("no spread"):
        return ("equal, every seed the same (described, not tested)" if reading.startswith("equal")
                else f"unequal without spread, {side} (described, not tested)")
    if reading == "no finding":
        return "no finding" + (" (no difference shown, as the paper reports; not a proof of equality)"
                               if expect in ("=", ">=") else "")
    if expect == "":
        return f"differs: {side}"
    agrees = direction == expect or (expect == ">=" and direction == ">")
    return f"{'agrees' if agrees else 'disagrees'}: {side}"


def describe_row(table: dict, row: str, measure: str) -> str:
    name, key = split_row(row, measure)
    found = values(table, row, measure)
    what = name if key == measure else f"{name} [{key}]"
    if not found:
        return f"{what} (not run)"
    digits = DIGITS.get(key, 3)
    spread = f" ± {statistics.stdev(found):.{digits}f}" if len(found) > 1 else ""
    return f"{what} {statistics.fmean(found):.{digits}f}{spread} ({len(found)} seed{'s' * (len(found) != 1)})"


def render_claim(claim: Claim, checks: list[Checked], table: dict, pooled: list[Checked] | None = None,
                 part: str = "") -> list[str]:
    """One claim against the records: what the paper says and, per pair, the
    gap, its 95% interval, Welch's exact p and the Holm-corrected decision
    under each grouping (per claim; per paper, the grouping declared first).
    On a part the claim cannot be read on (claim.not_read) the figures are
    shown and every decision is withheld, with the reason."""
    withheld = dict(claim.not_read).get(part, "")
    lines = [f"- {claim.where}: {claim.says}. {MEASURES.get(claim.measure, claim.measure)}; "
             f"{EXPECTED[claim.expect]}." + (f" *Edited after its result:* {claim.edited}." if claim.edited else "")
             + (f" *Not read on this part* (decided 2026-12-02, after the results): {withheld}." if withheld else "")]
    said = (lambda checked: "not read (see above)") if withheld else (lambda checked: verdict(claim.expect, checked))
    pooled = pooled or checks
    digits = DIGITS.get(claim.measure, 3)
    for checked, first in zip(checks, pooled):
        c = checked.comparison
        evidence = ""
        if c is not None and c.testable:
            evidence = (f": gap {c.gap:+.{digits}f} [{c.low:+.{digits}f}, {c.high:+.{digits}f}], "
                        f"Welch p = {c.p:.3g}")
        elif c is not None:
            evidence = f": gap {c.gap:+.{digits}f}"
        lines.append(f"  - {describe_row(table, checked.a, claim.measure)} vs "
                     f"{describe_row(table, checked.b, claim.measure)}{evidence}: "
                     f"per claim **{said(checked)}**; per paper (declared first) **{said(first)}**")
    return lines


def sections(part: str, claims=CLAIMS) -> dict[str, list[Claim]]:
    """The claims checked on `part`, by paper (every paper, in PAPERS' order;
    a paper without a claim here is discussed, not tested)."""
    grouped: dict[str, list[Claim]] = {paper: [] for paper in PAPERS}
    for claim in claims:
        if part in claim.parts:
            grouped.setdefault(claim.paper, []).append(claim)
    return grouped


def findings(table: dict, part: str, claims=CLAIMS) -> list[str]:
    """Markdown: every paper's section, its setting, its claims checked."""
    if not table:
        return [f"The {'toy' if part == 'toy' else 'Multi30k'} part has no finished runs yet."]
    out = []
    for paper, mine in sections(part, claims).items():
        source = PAPERS[paper]
        checks, pooled = check_section(mine, table), check_pooled(mine, table)
        tested = sum(c.comparison is not None and c.comparison.testable for group in checks for c in group)
        how = ("Holm's correction at 5%, within each claim (the grouping since aafbdd3, chosen after the "
               f"results) and over this paper's {tested} tested comparison{'s' * (tested != 1)} together "
               "(the grouping declared first): both decisions are given."
               if tested else "Nothing tested here yet." if mine else "No comparison of rows tests this paper.")
        out += [f"#### {source.cite}", "", f"Their setting: {source.setting}. Against ours: {source.versus}. {how}", ""]
        for claim, group, first in zip(mine, checks, pooled):
            out += render_claim(claim, group, table, first, part)
        out.append("")
    return out
