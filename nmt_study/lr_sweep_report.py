"""The learning-rate sweep's page: each row at each Adam rate, the rate chosen
on validation, and the score finding read again at each row's own rate.

The grid trains every RNN at one shared rate. Unscaled dot-product scores
(luong_general, luong_dot) may want another rate than additive ones
(bahdanau), so "additive beats multiplicative" could be a tuning artefact;
this page says whether it survives when each row has its best rate.
"""

import statistics
from pathlib import Path

from nmt_study.configs import BASE, LR_SWEEP, LR_SWEEP_FOLDER, PROFILES, lr_name, lr_sweep_configs, study_configs
from nmt_study.report_header import portable_command
from nmt_study.tables import collect

ADDITIVE, MULTIPLICATIVE = "bahdanau", ("luong_general", "luong_dot")


def sweep_runs(out_dir: Path, seeds: int = LR_SWEEP.seeds) -> list[dict]:
    """One dict per planned or recorded run of the sweep (nmt_study.tables.collect)."""
    configs = lr_sweep_configs("multi30k")
    return collect(out_dir, configs, {c.name: list(range(1, seeds + 1)) for c in configs})


def _mean(runs: list[dict], key: str, confirm: bool = False) -> float | None:
    values = [(r["confirm"] if confirm else r["eval"]).get(key) for r in runs
              if r["eval"] and (not confirm or r["confirm"])]
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def _cell(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def chosen_rates(runs: list[dict]) -> dict[str, float]:
    """row -> the rate of its highest mean validation BLEU, for the rows whose every
    rate has finished (a row still training has no chosen rate yet)."""
    chosen = {}
    for row in LR_SWEEP.rows:
        scored = [(_mean([r for r in runs if r["name"] == lr_name(row, rate)], "valid_bleu"), rate)
                  for rate in LR_SWEEP.rates]
        if all(bleu is not None for bleu, _ in scored):
            chosen[row] = max(scored)[1]
    return chosen


def grid_spread(grid_dir: Path) -> dict[str, tuple[float, int]]:
    """row -> (standard deviation of test BLEU over the grid's seeds at its one rate, seeds)."""
    configs = [c for c in study_configs("multi30k") if c.name in LR_SWEEP.rows]
    runs = collect(grid_dir, configs, {})
    spread = {}
    for row in LR_SWEEP.rows:
        scores = [r["eval"]["test_bleu"] for r in runs if r["name"] == row and r["eval"]]
        if len(scores) >= 2:
            spread[row] = (statistics.stdev(scores), len(scores))
    return spread


def table_lines(runs: list[dict], chosen: dict[str, float]) -> list[str]:
    lines = ["| configuration | Adam rate | validation BLEU | test_2016 BLEU | test_2017 BLEU | attention entropy "
             "(nats) | runs |", "|---|---|---|---|---|---|---|"]
    for row in LR_SWEEP.rows:
        for rate in LR_SWEEP.rates:
            mine = [r for r in runs if r["name"] == lr_name(row, rate)]
            done = [r for r in mine if r["eval"]]
            mark = "**" if chosen.get(row) == rate else ""
            lines.append(f"| {row} | {mark}{rate:g}{mark} | {mark}{_cell(_mean(done, 'valid_bleu'))}{mark} | "
                         f"{_cell(_mean(done, 'test_bleu'))} | {_cell(_mean(done, 'test_bleu', confirm=True))} | "
                         f"{_cell(_mean(done, 'entropy'), 3)} | {len(done)} of {len(mine)} |")
    return lines


def readable(runs: list[dict], chosen: dict[str, float]) -> bool:
    """Every rate of every row has finished, so each row's rate is chosen."""
    return set(chosen) == set(LR_SWEEP.rows) and not any(r["status"] == "not run" for r in runs)


def gaps_at_best(runs: list[dict], chosen: dict[str, float], spread: dict[str, tuple[float, int]]) -> dict:
    """Per test set read: ({row: test BLEU at its own rate}, [(multiplicative row, additive's lead,
    level: under twice the grid's largest seed spread, or None where no spread of that test set
    exists)]). The grid's spread is of test_2016 BLEU; the grid scored no run on test_2017, so
    test_2017's gaps are given without a level reading."""
    at_best = {row: [r for r in runs if r["name"] == lr_name(row, chosen[row]) and r["eval"]] for row in chosen}
    noise = {"test_2016": max((sd for sd, _ in spread.values()), default=None), "test_2017": None}
    found = {}
    for test, confirm in (("test_2016", False), ("test_2017", True)):
        scores = {row: _mean(at_best[row], "test_bleu", confirm) for row in chosen}
        if any(v is None for v in scores.values()):
            continue
        leads = [(other, scores[ADDITIVE] - scores[other]) for other in MULTIPLICATIVE]
        found[test] = scores, [(other, gap, None if noise[test] is None else abs(gap) < 2 * noise[test])
                               for other, gap in leads]
    return found


def lead_words(other: str, gap: float, level: bool | None) -> str:
    if level is None:
        return f"{'ahead of' if gap > 0 else 'behind'} {other} by {abs(gap):.2f} (no seed spread of this set)"
    if level:
        return f"level with {other} ({gap:+.2f}, under twice the grid's seed spread)"
    return f"{'ahead of' if gap > 0 else 'behind'} {other} by {abs(gap):.2f}"


def peaked_at_end(runs: list[dict]) -> list[str]:
    """The runs whose best validation fell at their last update: still improving when the budget ended."""
    return sorted(f"{r['name']}" for r in runs if r["eval"] and r["eval"].get("best_step") is not None
                  and r["eval"].get("best_step") == r["eval"].get("final_step"))


def reading_lines(runs: list[dict], chosen: dict[str, float], spread: dict[str, tuple[float, int]]) -> list[str]:
    """The score finding at each row's own rate, or what is still missing."""
    if not readable(runs, chosen):
        missing = sorted({r["name"] for r in runs if not r["eval"]})
        return [f"Not read yet: {len(missing)} of {len(runs)} runs have no record ({', '.join(missing)}). The "
                "reading is written here, and each row's rate is chosen (bold), when every rate of every row "
                "has finished."]
    lines = []
    for test, (scores, leads) in gaps_at_best(runs, chosen, spread).items():
        verdicts = [lead_words(other, gap, level) for other, gap, level in leads]
        lines.append(f"- On {test}, at each row's own rate: {ADDITIVE} {scores[ADDITIVE]:.2f} (rate "
                     f"{chosen[ADDITIVE]:g}), " + ", ".join(f"{m} {scores[m]:.2f} (rate {chosen[m]:g})"
                                                           for m in MULTIPLICATIVE)
                     + f": {ADDITIVE} is " + " and ".join(verdicts) + ".")
    edges = [f"{row}'s ({chosen[row]:g})" for row in LR_SWEEP.rows
             if chosen[row] in (min(LR_SWEEP.rates), max(LR_SWEEP.rates))]
    if edges:
        lines += ["", f"At the edge of the sweep: {', '.join(edges)} chosen rate is the smallest or largest tried, "
                  "so its best rate may lie beyond it."]
    if spread:
        lines += ["", "Scale: one seed per rate, so no test of significance is possible here. The grid's "
                  "seed-to-seed standard deviation of test_2016 BLEU at its rate is "
                  + ", ".join(f"{sd:.2f} for {row} ({n} seeds)" for row, (sd, n) in spread.items())
                  + "; a test_2016 gap under twice the largest of these is read as level. The grid scored no run on "
                  "test_2017, so test_2017's gaps have no spread to be read against and are given as gaps only."]
    ended = peaked_at_end(runs)
    done = sum(1 for r in runs if r["eval"])
    if ended:
        lines += ["", f"Still improving at the budget: {len(ended)} of the {done} runs had their best validation "
                  f"at their last update ({', '.join(ended)}), so each score is the rate's at "
                  "this budget, not at its best; a rate that learns faster is favoured."]
    return lines


def write_lr_sweep_report(out_dir: Path, settings: dict) -> str:
    """README.md of the sweep's folder, from its records; returns the text."""
    out_dir = Path(out_dir)
    runs = sweep_runs(out_dir)
    chosen = chosen_rates(runs)
    spread = grid_spread(out_dir.parent / "multi30k")
    sessions = settings.get("sessions") or []
    commits = sorted({r["commit"] for r in runs if r["commit"]})
    text = "\n".join([
        "# The learning-rate sweep", "",
        "Does additive attention (bahdanau) still beat multiplicative attention (luong_general, luong_dot) when "
        "each trains at its own best learning rate? The grid trains every RNN row at one shared Adam rate, "
        f"{PROFILES['multi30k'].lr:g}. Here each of the three rows trains at each of the rates "
        f"{', '.join(f'{r:g}' for r in LR_SWEEP.rates)} (the grid's and a factor of 2 either side), seed 1, "
        f"at the grid's budget of {settings.get('budget_steps', 0):,} updates with a constant rate, everything "
        "else the grid's. Each row's rate (bold) is the one with the highest validation BLEU "
        f"({settings.get('val_sentences', '?')} validation sentences): no rate is chosen on a test set. Every "
        "run is also scored on test_2017_flickr, which nothing in the study was chosen on. "
        f"[{BASE} and the grid](../multi30k/README.md) · [the index](../README.md)", "",
        *table_lines(runs, chosen), "", "## Reading", "", *reading_lines(runs, chosen, spread), "",
        "## How these runs were made", "",
        f"- Commit{'s' if len(commits) != 1 else ''}: {', '.join(commits) or 'none yet'}.",
        *([f"- Last command: `{portable_command(sessions[-1]['command'], out_dir)}` on {sessions[-1]['machine']}, "
           f"{sessions[-1]['date']}."] if sessions else []), ""])
    (out_dir / "README.md").write_text(text, encoding="utf-8")
    return text


def lr_sweep_item(root: Path) -> str:
    """The index's pointer to the sweep and its state."""
    runs = sweep_runs(Path(root) / LR_SWEEP_FOLDER)
    done = sum(r["eval"] is not None for r in runs)
    if not done:
        return (f"- Learning-rate sweep (luong_general, luong_dot, bahdanau at "
                f"{', '.join(f'{r:g}' for r in LR_SWEEP.rates)}; {len(runs)} runs planned): not run yet")
    item = (f"- [Learning-rate sweep](learning_rate/README.md) (does additive still beat multiplicative at each "
            f"one's best rate?): {done} of {len(runs)} runs finished")
    chosen = chosen_rates(runs)
    if not readable(runs, chosen):
        return item
    found = gaps_at_best(runs, chosen, grid_spread(Path(root) / "multi30k"))
    said = [f"on {test} {ADDITIVE} is " + ", ".join(lead_words(other, gap, level) for other, gap, level in leads)
            for test, (_, leads) in found.items()]
    ended = len(peaked_at_end(runs))
    return item + ("; " + "; ".join(said) + f" (one seed a rate; {ended} of {done} runs still improving at their "
                   "last update)" if said else "")
