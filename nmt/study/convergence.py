"""The Multi30k report's section on the convergence check: do the grid's
orderings hold when the same rows train to convergence?

The rows of nmt.study.configs.CONVERGENCE train 3x the grid's update budget
with early stopping on validation BLEU (python -m nmt.study --convergence,
records in benchmarks/attention_study/convergence/records). For every pair
of those rows of one architecture, the grid's ordering by mean test BLEU is
checked at convergence with Welch's test and Holm's correction over the
pairs (nmt.study.statistics): it holds, reverses, or is not settled.
"""

import statistics
from itertools import combinations
from pathlib import Path

from nmt.study.configs import CONVERGENCE, CONVERGENCE_FOLDER, study_configs
from nmt.study.gallery import learning_curves
from nmt.study.statistics import decide, welch
from nmt.study.tables import aggregate, collect

CURVES = "curves_convergence.png"


def ordering_checks(grid: dict, converged: dict, rows: list[str], transformer: dict) -> list[tuple]:
    """(first, second, grid gap, Comparison at convergence, reading) per pair of
    one architecture with runs in both, the grid's better row first."""
    def bleu(table, name):
        return table.get(name, {}).get("values", {}).get("test_bleu", [])

    pairs = []
    for a, b in combinations(rows, 2):
        if transformer[a] != transformer[b] or not all(bleu(t, n) for t in (grid, converged) for n in (a, b)):
            continue
        gap = statistics.fmean(bleu(grid, a)) - statistics.fmean(bleu(grid, b))
        first, second = (a, b) if gap >= 0 else (b, a)
        pairs.append((first, second, abs(gap), welch(bleu(converged, first), bleu(converged, second))))
    readings = decide([c for *_, c in pairs])
    return [(*p, r) for p, r in zip(pairs, readings)]


def held(comparison, reading: str) -> str:
    if reading == "differs":
        return "holds" if comparison.gap > 0 else "reverses"
    if reading == "no finding":
        return "is not settled (no finding)"
    if reading == "too few seeds":
        return "cannot be tested yet (fewer than 2 seeds on a side)"
    return f"is described, not tested ({reading})"        # seeds without spread


def paragraph(checks: list[tuple]) -> str:
    """The one paragraph: which orderings of the grid hold at convergence."""
    if not checks:
        return "No ordering to check yet: the rows need finished runs in both the grid and the check."
    parts = []
    for first, second, gap, c, reading in checks:
        evidence = (f"gap {c.gap:+.2f} [{c.low:+.2f}, {c.high:+.2f}], Welch p = {c.p:.3g}" if c.testable
                    else f"gap {c.gap:+.2f}")
        parts.append(f"{first} above {second} (grid: by {gap:.2f} BLEU) {held(c, reading)} at convergence "
                     f"({evidence})")
    return ("Of the grid's orderings among these rows, by mean test BLEU at 1,600 (RNN) or 1,000 "
            "(Transformer) updates, with Holm's correction over the "
            f"{len(checks)} pair{'s' * (len(checks) != 1)}: " + "; ".join(parts) + ".")


def convergence_lines(out_dir: Path, grid: dict) -> list[str]:
    """The section; its curves are drawn into out_dir (CURVES)."""
    folder = Path(out_dir).parent / CONVERGENCE_FOLDER
    configs = [c for c in study_configs("multi30k") if c.name in CONVERGENCE.rows]
    runs = [r for r in collect(folder, configs, {}) if r["eval"]] if (folder / "records").is_dir() else []
    out = ["", "## Convergence check", "",
           f"The rows {', '.join(CONVERGENCE.rows)} trained {CONVERGENCE.factor}× the grid's update budget with "
           f"early stopping ({CONVERGENCE.patience} validations without a gain), {CONVERGENCE.seeds} seeds each "
           "(`python -m nmt.study --convergence`, records in `../convergence/records`)."]
    if not runs:
        return out + ["", "Not run yet: no finished record in ../convergence/records."]
    table = aggregate(runs)
    out += ["", "| configuration | seeds | grid test BLEU | converged test BLEU | best update | updates run |",
            "|---|---|---|---|---|---|"]
    for name in CONVERGENCE.rows:
        mine = [r for r in runs if r["name"] == name]
        if not mine:
            out.append(f"| {name} | 0 | – | not run yet | – | – |")
            continue
        out.append(f"| {name} | {len(mine)} | {mean_sd(grid, name)} | {mean_sd(table, name)} | "
                   f"{', '.join(str(r['eval']['best_step']) for r in mine)} | "
                   f"{', '.join(str(r['eval']['final_step']) for r in mine)} |")
    learning_curves(runs, Path(out_dir) / CURVES, "Convergence check", list(CONVERGENCE.rows))
    transformer = {c.name: c.transformer for c in configs}
    checks = ordering_checks(grid, table, list(CONVERGENCE.rows), transformer)
    return out + ["", f"![Convergence check: validation BLEU]({CURVES})", "", paragraph(checks)]


def check_pointer_lines() -> list[str]:
    """In the check's own report: where it is read against the grid."""
    return ["", "## Against the grid", "",
            "This report holds the convergence check's runs alone. Which of the grid's orderings hold at "
            "convergence, with the grid's figures beside these, is read in the Multi30k report's section "
            "*Convergence check* ([../multi30k/README.md](../multi30k/README.md#convergence-check))."]


def mean_sd(table: dict, name: str) -> str:
    found = table.get(name, {}).get("values", {}).get("test_bleu", [])
    if not found:
        return "–"
    return f"{statistics.fmean(found):.2f}" + (f" ± {statistics.stdev(found):.2f}" if len(found) > 1 else "")
