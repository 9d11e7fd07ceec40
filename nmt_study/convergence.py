"""The Multi30k report's section on the convergence check: do the grid's
orderings hold when the same rows train to convergence?

The rows of nmt_study.configs.CONVERGENCE train 3x the grid's update budget
with early stopping on validation BLEU (python -m nmt_study --convergence,
records in benchmarks/attention_study/convergence/records). For every pair
of those rows of one architecture, the grid's ordering by mean test BLEU is
read in the grid and at early stopping with Welch's test and Holm's correction
over the pairs (nmt_study.statistics): a finding of the grid holds, reverses,
or is not confirmed at early stopping.
"""

import statistics
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from nmt_study.configs import CONVERGENCE, CONVERGENCE_FOLDER, study_configs
from nmt_study.gallery import learning_curves
from nmt_study.statistics import Comparison, decide, welch
from nmt_study.tables import aggregate, collect

CURVES = "curves_convergence.png"
NOT_CONFIRMED = "is not confirmed at early stopping (no finding there)"


@dataclass(frozen=True)
class OrderingCheck:
    """One pair of rows of one architecture, the grid's better row first: its
    gap in the grid and at early stopping, each read with Holm over the pairs."""
    first: str
    second: str
    grid: Comparison
    grid_reading: str
    converged: Comparison
    converged_reading: str


def ordering_checks(grid: dict, converged: dict, rows: list[str], transformer: dict) -> list[OrderingCheck]:
    """Every pair of `rows` of one architecture with runs in both, the grid's
    better row first; Holm's correction runs over the pairs, in the grid and
    at early stopping apart."""
    def bleu(table, name):
        return table.get(name, {}).get("values", {}).get("test_bleu", [])

    pairs = []
    for a, b in combinations(rows, 2):
        if transformer[a] != transformer[b] or not all(bleu(t, n) for t in (grid, converged) for n in (a, b)):
            continue
        first, second = (a, b) if statistics.fmean(bleu(grid, a)) >= statistics.fmean(bleu(grid, b)) else (b, a)
        pairs.append((first, second, welch(bleu(grid, first), bleu(grid, second)),
                      welch(bleu(converged, first), bleu(converged, second))))
    grid_readings = decide([g for _, _, g, _ in pairs])
    converged_readings = decide([c for *_, c in pairs])
    return [OrderingCheck(a, b, g, gr, c, cr)
            for (a, b, g, c), gr, cr in zip(pairs, grid_readings, converged_readings)]


def verdict(check: OrderingCheck) -> str:
    """Does the grid's conclusion on this pair hold at early stopping? In words."""
    grid, converged = check.grid_reading, check.converged_reading
    if "too few seeds" in (grid, converged):
        side = "the grid" if grid == "too few seeds" else "the convergence check"
        return f"cannot be tested yet (fewer than 2 seeds on a side in {side})"
    if "spread" in grid or "spread" in converged:
        return f"is described, not tested (grid: {grid}; at early stopping: {converged})"
    if grid == "differs":
        if converged == "differs":
            return "holds" if check.converged.gap > 0 else "reverses"
        return NOT_CONFIRMED
    if converged == "differs":
        ahead = check.first if check.converged.gap > 0 else check.second
        return f"was no finding in the grid; at early stopping {ahead} is ahead (a finding of the check alone)"
    return "is a finding neither in the grid nor at early stopping"


def shown_verdict(check: OrderingCheck) -> str:
    """The verdict as the paragraph says it: a finding not confirmed at
    early stopping also says which way the gap points there."""
    said = verdict(check)
    if said != NOT_CONFIRMED:
        return said
    way = ("the gap keeps the grid's direction but is not significant after Holm's correction"
           if check.converged.gap > 0 else "the gap points the other way, within noise")
    return NOT_CONFIRMED.removesuffix(")") + f": {way})"


def evidence(c: Comparison) -> str:
    if not c.testable:
        return f"{c.gap:+.2f}"
    return f"{c.gap:+.2f} [{c.low:+.2f}, {c.high:+.2f}], p = {c.p:.3g}"


def paragraph(checks: list[OrderingCheck]) -> str:
    """The one paragraph: which of the grid's conclusions hold at early stopping."""
    if not checks:
        return "No ordering to check yet: the rows need finished runs in both the grid and the check."
    parts = [f"{c.first} above {c.second} {shown_verdict(c)} (grid {evidence(c.grid)}; at early stopping "
             f"{evidence(c.converged)})" for c in checks]
    findings = [c for c in checks if c.grid_reading == "differs"]
    groups = {"holds": "that hold at early stopping", "reverses": "that reverse there",
              NOT_CONFIRMED: "that are not confirmed there (no finding at early stopping)"}
    named = [(label, [f"{c.first} above {c.second}" for c in findings if verdict(c) == key])
             for key, label in groups.items()]
    named.append(("that cannot be tested there yet",
                  [f"{c.first} above {c.second}" for c in findings if verdict(c) not in groups]))
    summary = (" The grid's findings among these rows " + "; ".join(f"{label}: {', '.join(pairs)}"
                                                              for label, pairs in named if pairs) + "."
               if findings else
               " None of these orderings is a finding of the grid, so none can be said to hold or fail at "
               "early stopping.")
    return ("Each pair's gap in test BLEU (its 95% interval and Welch's p), in the grid at 1,600 (RNN) or "
            "1,000 (Transformer) updates and at early stopping, read with Holm's correction over the "
            f"{len(checks)} pair{'s' * (len(checks) != 1)} in each: " + "; ".join(parts) + "." + summary)


def convergence_lines(out_dir: Path, grid: dict) -> list[str]:
    """The section; its curves are drawn into out_dir (CURVES)."""
    folder = Path(out_dir).parent / CONVERGENCE_FOLDER
    configs = [c for c in study_configs("multi30k") if c.name in CONVERGENCE.rows]
    runs = [r for r in collect(folder, configs, {}) if r["eval"]] if (folder / "records").is_dir() else []
    out = ["", "## Convergence check", "",
           f"The rows {', '.join(CONVERGENCE.rows)} trained {CONVERGENCE.factor}× the grid's update budget with "
           f"early stopping ({CONVERGENCE.patience} validations without a gain), {CONVERGENCE.seeds} seeds each "
           "(`python -m nmt_study --convergence`, records in `../convergence/records`)."]
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
                   f"{', '.join(str(r['eval']['final_step']) + (' (cap)' if at_cap(r) else '') for r in mine)} |")
    out += cap_lines(runs)
    learning_curves(runs, Path(out_dir) / CURVES, "Convergence check", list(CONVERGENCE.rows))
    transformer = {c.name: c.transformer for c in configs}
    checks = ordering_checks(grid, table, list(CONVERGENCE.rows), transformer)
    return out + ["", f"![Convergence check: validation BLEU]({CURVES})", "", paragraph(checks)]


def override(run: dict, key: str) -> int | None:
    """An integer override the run was trained with (trainer.max_steps, ...), if it names one."""
    for item in run.get("common", []):
        name, _, value = item.partition("=")
        if name == key:
            return int(value)
    return None


def at_cap(run: dict) -> bool:
    """Did the update cap end the run, before early stopping's patience ran out?
    (A run whose patience ran out on the cap's own validation was stopped by both: not counted.)"""
    cap, patience, every = (override(run, k) for k in ("trainer.max_steps", "trainer.patience", "trainer.val_every"))
    if cap is None or run["eval"]["final_step"] < cap:
        return False
    return patience is None or every is None or run["eval"]["final_step"] - run["eval"]["best_step"] < patience * every


def cap_lines(runs: list[dict]) -> list[str]:
    """Which runs the cap ended: their figures are the best within the cap."""
    capped = [r for r in runs if at_cap(r)]
    if not capped:
        return ["", f"Every run ended by early stopping, before its update cap ({len(runs)} of {len(runs)})."]
    named = ", ".join(f"{r['name']} seed {r['seed']} (best update {r['eval']['best_step']} of "
                      f"{override(r, 'trainer.max_steps')})" for r in capped)
    return ["", f"{len(capped)} of {len(runs)} runs ended at the update cap with early stopping's patience not "
            f"yet spent: {named}. Their figures are the best within the cap, a lower bound on the converged "
            "figure; a best update near the cap says the run was still gaining."]


# where the grid's convergence check is read
CHECK_SECTION = "*Convergence check* ([../multi30k/README.md](../multi30k/README.md#convergence-check))"


def check_pointer_lines() -> list[str]:
    """In the check's own report: where it is read against the grid."""
    return ["", "## Against the grid", "",
            "This report holds the convergence check's runs alone. Which of the grid's orderings hold at "
            "early stopping, with the grid's figures beside these, is read in the Multi30k report's section "
            f"{CHECK_SECTION}."]


def confirmation_pointer_lines() -> list[str]:
    """In the confirmation runs' report: where the grid's own convergence check is read."""
    return ["", "## The grid's convergence check", "",
            "The runs above are trained to early stopping themselves. The separate check of the grid's rows "
            "at 3× its update budget, with the grid's figures beside them, is read in the Multi30k report's "
            f"section {CHECK_SECTION}."]


def mean_sd(table: dict, name: str) -> str:
    found = table.get(name, {}).get("values", {}).get("test_bleu", [])
    if not found:
        return "–"
    return f"{statistics.fmean(found):.2f}" + (f" ± {statistics.stdev(found):.2f}" if len(found) > 1 else "")
