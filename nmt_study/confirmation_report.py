"""The first confirmation runs' reading (issue 45): every ordering the headlines rest
on (nmt_study.claims.CONFIRMATION_CLAIMS, declared in aafbdd3 after two of these
runs' records were committed), read on
test_2016_flickr (the set the grid's top group was chosen on) and on
test_2017_flickr (a set nothing was chosen on), side by side.

Each claim on each set is its own Holm family (nmt_study.findings.check_claim).
A comparison is *confirmed* where it differs in the claimed direction on both
sets, *not confirmed* where test_2017 shows no finding, *reversed* where
test_2017 differs the other way; where test_2016 shows no finding, the reading
says whether test_2017 differs as claimed or against the claim. "At
early stopping" is said of a claim only when every finished run of its rows
stopped by early stopping, none at the cap.
"""

from nmt_study.claims import CONFIRMATION_CLAIMS, Claim
from nmt_study.configs import CONFIRMATION
from nmt_study.findings import Checked, check_claim
from nmt_study.statistics import power_at
from nmt_study.statistics import describe
from nmt_study.tables import aggregate

SETS = ("test_2016_flickr", "test_2017_flickr")
CAPPED = "trainer.max_steps"    # a run's stopped_by when the update cap ended it


def on_confirmation_set(runs: list[dict]) -> list[dict]:
    """The same runs with their test_2017 figures (record["confirm"]["eval"]) as their eval."""
    return [{**run, "eval": run.get("confirm") if run["eval"] is not None else None} for run in runs]


def judged(claim: Claim, first: Checked, second: Checked) -> tuple[str, str]:
    """One comparison on both sets -> (verdict, reading). The verdict is what the index
    groups by: confirmed, not confirmed, reversed, against the claim on test_2016, no
    finding on test_2016, or not read. The reading is the page's words for it."""
    if first.comparison is None or second.comparison is None:
        return "not read", "not run yet"
    if "too few seeds" in (first.reading, second.reading):
        return "not read", "too few seeds to test"
    claimed = {">": 1, "<": -1}.get(claim.expect, 0)
    if first.reading != "differs":
        if second.reading == "differs" and claimed:      # which way: the gap's sign is in the row
            return "no finding on test_2016", ("no finding on test_2016 (test_2017: differs "
                    f"{'as claimed' if second.comparison.gap * claimed > 0 else 'against the claim'})")
        return "no finding on test_2016", f"no finding on test_2016 (test_2017: {second.reading})"
    if claimed and first.comparison.gap * claimed < 0:
        return "against the claim on test_2016", "differs against the claim on test_2016"
    if second.reading != "differs":
        return "not confirmed", "**not confirmed** on test_2017 (" + second.reading + ")"
    if first.comparison.gap * second.comparison.gap < 0:
        return "reversed", "**reversed** on test_2017"
    return "confirmed", "**confirmed**"


def reading(claim: Claim, first: Checked, second: Checked) -> str:
    """One comparison on both sets, in words."""
    return judged(claim, first, second)[1]


def stopping_line(runs: list[dict]) -> tuple[str, bool]:
    """How the finished runs ended -> (the sentence, whether every one stopped early)."""
    finished = [r for r in runs if r["eval"] is not None]
    capped = [f"{r['name']} seed {r['seed']}" for r in finished if r["eval"].get("stopped_by") == CAPPED]
    planned = len(CONFIRMATION.rows) * CONFIRMATION.seeds
    early = sum(r["eval"].get("stopped_by") == "trainer.patience" for r in finished)
    text = (f"{len(finished)} of {planned} planned runs finished; {early} stopped by early stopping "
            f"(patience {CONFIRMATION.patience} validations), {len(capped)} at the cap of "
            f"{CONFIRMATION.cap_steps:,} updates" + (f" ({', '.join(capped)})" if capped else "") + ".")
    return text, bool(finished) and not capped and early == len(finished)


def claim_lines(claim: Claim, tables: tuple[dict, dict], runs: list[dict]) -> list[str]:
    """A claim's table: each comparison on both sets and its reading."""
    checks = [check_claim(claim, table) for table in tables]
    rows = {name for pair in claim.pairs for name in pair}
    mine = [r for r in runs if r["name"] in rows and r["eval"] is not None]
    converged = len(mine) == len(rows) * CONFIRMATION.seeds and \
        all(r["eval"].get("stopped_by") == "trainer.patience" for r in mine)
    lines = [f"### {claim.says}", "",
             f"Declared from {claim.where}; measure {claim.measure}; the claim: the first row "
             f"{'higher' if claim.expect == '>' else 'lower' if claim.expect == '<' else 'equal'}. "
             + ("Every finished run of these rows stopped early: read at early stopping." if converged else
                "Not every planned run of these rows has finished and stopped early: not yet read at "
                "early stopping."), "",
             "| comparison | seeds | test_2016: gap [95% CI], Welch p, Holm in the claim | "
             "test_2017: gap [95% CI], Welch p, Holm in the claim | power for a 2-BLEU gap on test_2017 | reading |",
             "|---|---|---|---|---|---|"]
    for (a, b), first, second in zip(claim.pairs, *checks):
        seeds = f"{tables[0].get(a, {}).get('n', 0)} / {tables[0].get(b, {}).get('n', 0)}"
        cells = [describe(c.comparison, c.reading) if c.comparison else c.reading for c in (first, second)]
        later = [tables[1].get(n, {}).get("values", {}).get(claim.measure, []) for n in (a, b)]
        power = power_at(*later, 2.0, 0.05 / len(claim.pairs))
        lines.append(f"| {a} vs {b} | {seeds} | {cells[0]} | {cells[1]} | "
                     f"{'–' if power is None else f'{power:.0%}'} | {reading(claim, first, second)} |")
    return lines + [""]


def confirmation_lines(runs: list[dict]) -> list[str]:
    """The section of the confirmation folder's README."""
    tables = (aggregate(runs), aggregate(on_confirmation_set(runs)))
    stopped, _ = stopping_line(runs)
    out = ["", "## Confirmation: test_2016 beside test_2017", "",
           "The orderings the headlines rest on, declared in `nmt_study/claims.py` (CONFIRMATION_CLAIMS; "
           "`nmt/study/claims.py` in aafbdd3, 2026-11-27 20:28), after two of these runs' records had been "
           "committed (bahdanau seed 1 at 18:13, luong_general seed 1 at 20:26), and on the grid's seeds 1-3; "
           "each trained to "
           "early stopping under a high update cap and scored on "
           "test_2016_flickr, where the grid's top group was chosen, and on test_2017_flickr, where nothing "
           "was chosen. Welch's test over the seeds; Holm's correction at 5% within each claim on each set. "
           "A comparison is **confirmed** where it differs in the claimed direction on both sets, **not "
           "confirmed** where test_2017 shows no finding, **reversed** where it differs the other way. Where "
           "test_2016 shows no finding, the reading says whether test_2017 differs as claimed or against the "
           "claim. Power: statsmodels' TTestIndPower for a 2-BLEU gap at the two rows' pooled test_2017 spread and "
           "seed counts, at alpha / m (Holm's first step in a claim of m comparisons): with three seeds most "
           "comparisons could not have been confirmed, so \"not confirmed\" is not evidence of no difference. "
           "Every run here stopped by early stopping on a 300-sentence validation set with patience 4 (800 "
           "updates): read at early stopping, not at a tested convergence. The pre-registered confirmation "
           "(../preregistered/README.md) replaces this reading.", "",
           stopped, ""]
    for claim in CONFIRMATION_CLAIMS:
        out += claim_lines(claim, tables, runs)
    return out


def confirmed_summary(runs: list[dict]) -> str:
    """One sentence for the study's index: which declared comparisons are confirmed on
    test_2017, which are not, and whether every run behind them was read at early stopping."""
    tables = (aggregate(runs), aggregate(on_confirmation_set(runs)))
    verdicts = [(f"{a} vs {b}", judged(claim, first, second)[0]) for claim in CONFIRMATION_CLAIMS
                for (a, b), first, second in zip(claim.pairs, *(check_claim(claim, t) for t in tables))]
    done = [(pair, verdict) for pair, verdict in verdicts if verdict != "not read"]
    stopped, converged = stopping_line(runs)
    complete = sum(r["eval"] is not None for r in runs) == len(CONFIRMATION.rows) * CONFIRMATION.seeds
    groups = {}
    for pair, verdict in done:
        groups.setdefault(verdict, []).append(pair)
    confirmed = groups.pop("confirmed", [])
    listed = "".join(f"; {word}: {len(pairs)} ({', '.join(pairs)})" for word, pairs in groups.items())
    return (f"{len(done)} of {len(verdicts)} declared comparisons readable{'' if complete else ' so far'}; "
            f"confirmed on test_2017_flickr{' at early stopping' if complete and converged else ''}: "
            f"{len(confirmed)}" + (f" ({', '.join(confirmed)})" if confirmed else "") + f"{listed}. {stopped}")
