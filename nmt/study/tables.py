"""The study's numbers, from the run records: one dict per run (`collect`),
per configuration their mean and spread over seeds (`aggregate`), Welch's
test between two configurations (`clearly_different`), a table's rows
against one of them with Holm's correction (`against`) and a table cell."""

import math
import statistics
from pathlib import Path

from nmt.study.configs import StudyConfig
from nmt.study.statistics import decide, describe, welch
from nmt.study.runner import read_record, record_path_of

# (key, column title, format); AER and entropy shown as they are stored
COLUMNS = [
    ("parameters", "parameters", "{:,.0f}"),
    ("steps_to_target", "updates to target", "{:,.0f}"),
    ("test_bleu", "test BLEU", "{:.2f}"),
    ("test_chrf", "chrF", "{:.2f}"),
    ("aer", "AER", "{:.3f}"),
    ("entropy", "entropy (nats)", "{:.2f}"),
    ("tokens_per_s", "train tok/s", "{:,.0f}"),
    ("final_step", "updates", "{:,.0f}"),
    ("cpu_minutes", "CPU-min", "{:.2f}"),
]
HEAD_COLUMNS = [("aer_best_head", "AER best head", "{:.3f}"),            # Transformers: each seed's best
                ("aer_all_heads_mean", "AER mean of all heads", "{:.3f}")]  # weights averaged over layers, heads
EXACT = {"parameters"}   # the same for every seed: no ± shown


def collect(out_dir: Path, configs: list[StudyConfig], seeds: dict[str, list[int]]) -> list[dict]:
    """One dict per run (planned or recorded): name, family, seed, status, eval, records, ..."""
    runs = []
    for config in configs:
        found = sorted(int(p.stem[4:]) for p in (Path(out_dir) / "records" / config.name).glob("seed*.json")
                       if p.stem[4:].isdigit())
        for seed in sorted(set(seeds.get(config.name, [])) | set(found)):
            record = read_record(record_path_of(out_dir, config.name, seed)) or {}
            status = record.get("status", "not run")
            evaluation = dict(record["eval"]) if status == "finished" else None
            if evaluation is not None:   # a decode-only row costs its decoding, not the training it reuses
                trained = 0 if config.decode_of else evaluation["wall_s"]
                evaluation["cpu_minutes"] = (trained + record.get("eval_seconds", 0)) / 60
            runs.append({"name": config.name, "family": config.family, "seed": seed, "status": status,
                         "eval": evaluation, "records": record.get("records", []),
                         "gallery": record.get("gallery", []), "hypotheses": record.get("hypotheses", []),
                         "reason": record.get("reason", "not run yet"), "commit": record.get("commit"),
                         "transformer": config.transformer,
                         "same_checkpoint": record.get("same_checkpoint_as_record")})
    for run in runs:
        run["first_seed"] = min(r["seed"] for r in runs if r["name"] == run["name"])
    return runs


def censored_steps(run: dict) -> float | None:
    """Updates to the target; a run that never reached it counts as its budget
    (final step), a lower bound."""
    e = run["eval"]
    if e is None or not e.get("target_bleu"):
        return None
    return e["steps_to_target"] if e.get("steps_to_target") is not None else e["final_step"]


def aggregate(runs: list[dict]) -> dict[str, dict]:
    """name -> {n, family, values: key -> list, stats: key -> (mean, sd or None), reached}."""
    table = {}
    for run in runs:
        entry = table.setdefault(run["name"], {"n": 0, "values": {}, "family": run["family"], "reached": 0})
        if run["eval"] is None:
            continue
        entry["n"] += 1
        for key, *_ in COLUMNS + [("aer_best_head",), ("aer_all_heads_mean",), ("valid_bleu",),
                                  ("last_valid_bleu",)]:
            value = censored_steps(run) if key == "steps_to_target" else run["eval"].get(key)
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                entry["values"].setdefault(key, []).append(float(value))
        entry["reached"] += run["eval"].get("steps_to_target") is not None
    for entry in table.values():
        entry["stats"] = {k: (statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else None)
                          for k, v in entry["values"].items()}
    return table


# Student's t, two-sided 5% (0.975 quantile), by degrees of freedom; between rows the lower df is used
T_975 = [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (5, 2.571), (6, 2.447), (7, 2.365), (8, 2.306),
         (9, 2.262), (10, 2.228), (12, 2.179), (15, 2.131), (20, 2.086), (30, 2.042), (60, 2.000)]


def t_975(df: float) -> float:
    """The two-sided 5% critical value of Student's t at `df` degrees of freedom
    (the table row at or below df, so never too small; 1.96 beyond 60)."""
    if df >= 120:
        return 1.960
    return next(t for d, t in reversed(T_975) if d <= max(df, 1))


def clearly_different(a: dict, b: dict, key: str) -> bool | None:
    """Welch's t-test at the 5% level: is |mean a - mean b| > t · se, with
    se = sqrt(sa²/na + sb²/nb) and Welch-Satterthwaite degrees of freedom
    df = se⁴ / ((sa²/na)²/(na-1) + (sb²/nb)²/(nb-1))? None when either has
    fewer than 2 seeds. With both spreads 0, any gap counts."""
    va, vb = a["values"].get(key, []), b["values"].get(key, [])
    if len(va) < 2 or len(vb) < 2:
        return None
    qa, qb = statistics.variance(va) / len(va), statistics.variance(vb) / len(vb)
    gap = abs(statistics.fmean(va) - statistics.fmean(vb))
    if qa + qb == 0:
        return gap > 0
    df = (qa + qb) ** 2 / (qa ** 2 / (len(va) - 1) + qb ** 2 / (len(vb) - 1))
    return gap > t_975(df) * math.sqrt(qa + qb)


def against(table: dict, names: list[str], reference: str, key: str, digits: int = 2) -> dict[str, str]:
    """Each row of `names` with runs (but `reference`) against `reference` on
    `key`: the gap of the means, its 95% interval, Welch's exact p and the
    reading once Holm's correction ran over all of these comparisons together
    (nmt.study.statistics): one table, one family."""
    base = table[reference]["values"].get(key, [])
    others = [n for n in names if n != reference and table[n]["values"].get(key)]
    comparisons = [welch(table[n]["values"][key], base) for n in others]
    return {n: describe(c, reading, digits)
            for n, c, reading in zip(others, comparisons, decide(comparisons))}


def seed_spread(table: dict[str, dict], key: str = "test_bleu") -> tuple[float | None, list[str]]:
    """Pooled standard deviation of `key` over configurations run with 2+ seeds."""
    variances, names = [], []
    for name, entry in table.items():
        values = entry["values"].get(key, [])
        if len(values) > 1:
            variances.append(statistics.variance(values))
            names.append(name)
    return (math.sqrt(statistics.fmean(variances)) if variances else None), names


def cell(entry: dict, key: str, fmt: str) -> str:
    if key not in entry["stats"]:
        return "–"
    mean, sd = entry["stats"][key]
    text = fmt.format(mean) + (f" ± {fmt.format(sd)}" if sd is not None and key not in EXACT else "")
    if key == "steps_to_target" and entry["reached"] < entry["n"]:
        if entry["reached"] == 0:
            return f"not reached in {fmt.format(max(entry['values']['final_step']))}"
        return f"≥ {text} ({entry['reached']}/{entry['n']} reached)"
    return text
