"""The pre-registered confirmation's page: its plan, its runs and the plan's decisions.

Everything here is read from OUT/plan.json and OUT/records (nmt_study.preregistration):
the decision rule is the plan's, not this module's. A comparison is decided only
when both of its rows have every planned seed finished, each stopped by its
stopping rule; before that it is shown as interim and decides nothing.

    differs        Holm (within the plan's family) rejects equality of the means
    equivalent     not differing, and the 90% Welch interval of the gap lies inside
                   (-margin, +margin): two one-sided tests at 5% (Schuirmann 1987)
    inconclusive   neither

Power at the observed spread: statsmodels' TTestIndPower for the plan's target gap,
at alpha / m (Holm's first step in a family of m), with the pooled standard
deviation of the two rows, as the plan computed it before the runs.
"""

import json
import math
import statistics
import subprocess
from pathlib import Path

from nmt import git_environment
from nmt_study.preregistration import Plan, check_records, plan_commit, record_commit
from nmt_study.statistics import holm, interval90, power_at, welch

STOPPED = "trainer.patience"          # a run's stopped_by when its stopping rule ended it


def finished_runs(out: Path, plan: Plan) -> list[dict]:
    """Every finished record of the plan's rows and seeds."""
    from nmt_study.runner import read_record, record_path_of

    runs = []
    for name in plan.rows:
        for seed in plan.seeds:
            record = read_record(record_path_of(out, name, seed))
            if record and record.get("status") == "finished":
                runs.append(record)
    return runs


def score(run: dict, test_set: str, plan: Plan) -> float | None:
    """A run's BLEU on the plan's primary or secondary set."""
    if test_set == plan.primary:
        return (run.get("confirm") or {}).get("eval", {}).get("test_bleu")
    return run["eval"].get("test_bleu")


def commit_date(repo: Path, commit: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), "show", "-s", "--format=%cI", commit],
                          capture_output=True, text=True, env=git_environment())
    return done.stdout.strip() or "unknown"


def complete(runs: list[dict], name: str, plan: Plan) -> bool:
    mine = [r for r in runs if r["name"] == name]
    return len(mine) == len(plan.seeds) and all(r["eval"].get("stopped_by") == STOPPED for r in mine)


def family_rows(plan: Plan, runs: list[dict], test_set: str) -> list[tuple]:
    """(family, a, b, comparison, decision, 90% interval, power) for every planned comparison."""
    out = []
    for family in plan.families:
        values = {n: [v for r in runs if r["name"] == n and (v := score(r, test_set, plan)) is not None]
                  for pair in family.pairs for n in pair}
        compared = [welch(values[a], values[b]) for a, b in family.pairs]
        tested = [k for k, c in enumerate(compared) if c.testable]
        rejected = dict(zip(tested, holm([compared[k].p for k in tested], plan.alpha)))
        m = len(family.pairs)
        for k, ((a, b), c) in enumerate(zip(family.pairs, compared)):
            band = interval90(values[a], values[b])
            power = power_at(values[a], values[b], plan.power["target_gap"], plan.alpha / m)
            if not c.testable:
                decision = "not testable yet"
            elif rejected[k]:
                decision = f"differs ({a} {'higher' if c.gap > 0 else 'lower'})"
            elif band and -plan.margin < band[0] and band[1] < plan.margin:
                decision = f"equivalent within ±{plan.margin:g} BLEU"
            else:
                decision = "inconclusive"
            final = complete(runs, a, plan) and complete(runs, b, plan)
            out.append((family, a, b, c, decision if final else f"interim: {decision}; decides nothing yet",
                        band, power))
    return out


def cell(c, band) -> str:
    if not c.testable:
        return f"{c.gap:+.2f} ({c.kind})" if not math.isnan(c.gap) else "–"
    interval = f"; 90% {band[0]:+.2f} to {band[1]:+.2f}" if band else ""
    return f"{c.gap:+.2f} (95% {c.low:+.2f} to {c.high:+.2f}{interval}), Welch p = {c.p:.3g}, df {c.df:.1f}"


def mean_sd(values: list[float]) -> str:
    if not values:
        return "–"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.fmean(values):.2f} ± {statistics.stdev(values):.2f}"


def progress_lines(plan: Plan, runs: list[dict]) -> list[str]:
    planned = len(plan.rows) * len(plan.seeds)
    minutes = [(r["eval"]["wall_s"] + r.get("eval_seconds", 0)) / 60 for r in runs]
    per_run = statistics.fmean(minutes) if minutes else plan.minutes_per_run
    basis = f"the mean of the {len(minutes)} finished runs" if minutes else "the plan's estimate"
    left = (planned - len(runs)) * per_run / 60
    stopped = sum(r["eval"].get("stopped_by") == STOPPED for r in runs)
    return [f"Runs finished: **{len(runs)} of {planned}** planned ({len(plan.rows)} rows × {len(plan.seeds)} "
            f"seeds); {stopped} stopped by the stopping rule, {len(runs) - stopped} otherwise. Core-hours spent: "
            f"{sum(minutes) / 60:.1f}; left: about {left:.1f} ({planned - len(runs)} runs × {per_run:.0f} minutes, "
            f"{basis}).", ""]


def where_best_fell(plan: Plan, runs: list[dict]) -> list[str]:
    lines = ["## Where each run's best fell", "",
             "Each run at early stopping (the plan's rule), not at a tested convergence: the update of its best "
             "validation BLEU, its last update and what stopped it.", "",
             f"| row | seeds finished | best at (updates) | last update | stopped by | {plan.primary} BLEU | "
             f"{plan.secondary} BLEU |", "|---|---|---|---|---|---|---|"]
    for name in plan.rows:
        mine = sorted((r for r in runs if r["name"] == name), key=lambda r: r["seed"])
        stops = sorted({str(r["eval"].get("stopped_by")) for r in mine})
        lines.append(f"| {name} | {len(mine)} of {len(plan.seeds)} | "
                     f"{', '.join(str(r['eval']['best_step']) for r in mine) or '–'} | "
                     f"{', '.join(str(r['eval']['final_step']) for r in mine) or '–'} | {', '.join(stops) or '–'} | "
                     f"{mean_sd([v for r in mine if (v := score(r, plan.primary, plan)) is not None])} | "
                     f"{mean_sd([v for r in mine if (v := score(r, plan.secondary, plan)) is not None])} |")
    return lines + [""]


def decision_lines(plan: Plan, runs: list[dict]) -> list[str]:
    lines = []
    for test_set, role in ((plan.primary, "decides"), (plan.secondary, "reported beside it, decides nothing")):
        lines += [f"## The plan's comparisons on {test_set} ({role})", "",
                  f"| family (Holm, m) | comparison | seeds | gap (BLEU) | power for {plan.power['target_gap']:g} "
                  "BLEU at the observed spread | reading |", "|---|---|---|---|---|---|"]
        for family, a, b, c, decision, band, power in family_rows(plan, runs, test_set):
            n = (sum(r["name"] == a for r in runs), sum(r["name"] == b for r in runs))
            lines.append(f"| {family.name} ({len(family.pairs)}) | {a} vs {b} | {n[0]} / {n[1]} | {cell(c, band)} | "
                         f"{'–' if power is None else f'{power:.0%}'} | "
                         f"{decision if test_set == plan.primary else decision.replace('interim: ', '')} |")
        lines.append("")
    return lines


def summary(out: Path, plan: Plan) -> str:
    """One sentence for the study's index."""
    runs = finished_runs(out, plan)
    readings = [f"{a} vs {b}: {decision}" for _, a, b, _, decision, _, _ in family_rows(plan, runs, plan.primary)]
    return (f"{len(runs)} of {len(plan.rows) * len(plan.seeds)} planned runs finished; on {plan.primary}: "
            + "; ".join(readings))


def write_preregistered_report(out: Path, plan: Plan, settings: dict) -> Path:
    """OUT/README.md from the plan and the records; refuses (NmtError) a record not pre-registered."""
    runs = finished_runs(out, plan)
    commit, date = check_records(plan, runs) if runs else plan_commit(plan)
    first = min(runs, key=lambda r: commit_date(plan.path.parent, record_commit(r)), default=None)
    first_line = (f"the first record was trained at {record_commit(first)[:12]} "
                  f"({commit_date(plan.path.parent, record_commit(first))})" if first else "no record yet")
    raw = plan.raw
    lines = [f"# {raw['title']}", "",
             f"The plan: [`plan.json`](plan.json), committed at **{commit[:12]}** ({date}); {first_line}. "
             "`python -m nmt_study --preregistered` refuses to train while the plan differs from its commit "
             "and refuses to score a record trained at a commit that does not descend from it. This page is "
             "rewritten from the records by the command.", "",
             *progress_lines(plan, runs),
             "## The plan", "",
             f"- **Data:** {raw['data']}.",
             "- **Rows:** " + "; ".join(f"`{n}`: {r['why']}" for n, r in plan.rows.items()) + ".",
             f"- **Seeds:** {', '.join(map(str, plan.seeds))} ({raw['seeds_why']}).",
             f"- **Training and stopping:** {raw['training']['rule']} (overrides: "
             f"`{' '.join(plan.training)}`).",
             f"- **Test sets:** {raw['test_sets']['why']}. **Measure:** {raw['measure']}.",
             f"- **Decision:** {raw['decision']['test']}; {raw['decision']['correction']} "
             f"(alpha {plan.alpha:g}). {raw['decision']['rule']}.",
             f"- **Power:** assumed spread {plan.power['assumed_sd']} BLEU ({plan.power['assumed_sd_from']}); "
             f"{plan.power['method']}; for a {plan.power['target_gap']:g}-BLEU gap, 8 seeds give "
             f"{plan.power['seeds_8']['m1']:.0%} (family of 1) and {plan.power['seeds_8']['m2']:.0%} (of 2), "
             f"12 seeds {plan.power['seeds_12']['m1']:.0%} and {plan.power['seeds_12']['m2']:.0%}; the smallest "
             f"gap found with 80% power at 12 seeds: {plan.power['minimum_detectable_gap_80']['m1']:.2f} and "
             f"{plan.power['minimum_detectable_gap_80']['m2']:.2f} BLEU.",
             f"- **Cost:** {raw['cost']['runs']} runs × about {plan.minutes_per_run:g} minutes ≈ "
             f"{raw['cost']['core_hours']} core-hours ({raw['cost']['basis']}).",
             "- **Families:** " + "; ".join(f"*{f.name}* ({f.question}): "
                                            + ", ".join(f"{a} vs {b}" for a, b in f.pairs) for f in plan.families)
             + ".", "",
             *decision_lines(plan, runs),
             *where_best_fell(plan, runs),
             "Machines: " + "; ".join(sorted({s.get("machine", "?") for s in settings.get("sessions", [])}) or
                                     ["none yet"]) + ".", ""]
    path = Path(out) / "README.md"
    path.write_text("\n".join(lines))
    (Path(out) / "readings.json").write_text(json.dumps(
        [{"family": f.name, "a": a, "b": b, "gap": c.gap, "p": c.p, "decision": d, "power": p}
         for f, a, b, c, d, _, p in family_rows(plan, runs, plan.primary)], indent=1) + "\n")
    return path

