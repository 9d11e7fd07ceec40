"""The study's numbers, from the run records: one dict per run (`collect`),
per configuration their mean and spread over seeds (`aggregate`), a
table's rows against one of them with Holm's correction (`against`) and a
table cell. "Updates to the target" is censored (a run that never reached
it has no value), so it is shown as "k of n reached" with the updates of
those that did, never averaged or tested."""

import math
import statistics
from pathlib import Path

from nmt import NmtError
from nmt_study.configs import StudyConfig
from nmt_study.readings import derived
from nmt_study.statistics import decide, describe, welch
from nmt_study.runner import read_record, record_path_of

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
HEAD_COLUMNS = [("aer_head_valid", "AER, head chosen on valid", "{:.3f}"),  # Transformers: scored on test
                ("aer_all_heads_mean", "AER mean of all heads", "{:.3f}")]  # weights averaged over layers, heads
EXACT = {"parameters"}   # the same for every seed: no ± shown
# figures kept over seeds beside the columns: the Transformers' heads, validation BLEU and the
# alignment readings of nmt_study.readings
EXTRA_KEYS = ["aer_best_head", "aer_all_heads_mean", "valid_bleu", "last_valid_bleu", "precision", "recall",
              "aer_linked", "aer_shift", "aer_head_valid", "aer_head_valid_shift", "unlinked_share"]


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
                if not config.decode_of and evaluation.get("wall_s") is None:     # the cost column needs it
                    raise NmtError(f"study record {record_path_of(out_dir, config.name, seed)}: finished, but "
                                   "eval.wall_s is missing; remove it to train the run again")
                trained = 0 if config.decode_of else evaluation["wall_s"]
                evaluation["cpu_minutes"] = (trained + record.get("eval_seconds", 0)) / 60
                evaluation.update(derived(evaluation))
            runs.append({"name": config.name, "family": config.family, "seed": seed, "status": status,
                         "eval": evaluation, "records": record.get("records", []),
                         "gallery": record.get("gallery", []), "hypotheses": record.get("hypotheses", []),
                         "reason": record.get("reason", "not run yet"), "commit": record.get("commit"),
                         "common": record.get("common", []), "transformer": config.transformer,
                         "same_checkpoint": record.get("same_checkpoint_as_record"),
                         "confirm": (record.get("confirm") or {}).get("eval") if evaluation is not None else None})
    for run in runs:
        run["first_seed"] = min(r["seed"] for r in runs if r["name"] == run["name"])
    return runs


def aggregate(runs: list[dict]) -> dict[str, dict]:
    """name -> {n, family, values: key -> list, stats: key -> (mean, sd or None), reached,
    targeted}: `values["steps_to_target"]` holds the reached runs' updates only."""
    table = {}
    for run in runs:
        entry = table.setdefault(run["name"], {"n": 0, "values": {}, "family": run["family"], "reached": 0})
        if run["eval"] is None:
            continue
        entry["n"] += 1
        for key in [k for k, *_ in COLUMNS] + EXTRA_KEYS:
            value = run["eval"].get(key)
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                entry["values"].setdefault(key, []).append(float(value))
        entry["reached"] += run["eval"].get("steps_to_target") is not None
        entry["targeted"] = entry.get("targeted", 0) + bool(run["eval"].get("target_bleu"))
    for entry in table.values():
        entry["stats"] = {k: (statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else None)
                          for k, v in entry["values"].items()}
    return table


def against(table: dict, names: list[str], reference: str, key: str, digits: int = 2,
            declared: dict | None = None) -> dict[str, str]:
    """Each row of `names` with runs (but `reference`) against `reference` on
    `key`: the gap of the means, its 95% interval, Welch's exact p and the
    reading once Holm's correction ran over these comparisons together
    (nmt_study.statistics): one table, one family. A comparison a claim
    declares (`declared`, nmt_study.findings.declared) is not tested again: it
    shows its claim's decision, marked "(claim: PAPER, WHERE)", and leaves the
    table's family."""
    declared = declared or {}
    base = table[reference]["values"].get(key, [])
    others = [n for n in names if n != reference and table[n]["values"].get(key)]
    comparisons = {n: welch(table[n]["values"][key], base) for n in others}
    own = [n for n in others if (n, reference, key) not in declared]
    readings = dict(zip(own, decide([comparisons[n] for n in own])))
    for n in others:
        if n not in readings:
            reading, claim = declared[(n, reference, key)]
            readings[n] = f"{reading} (claim: {claim.paper}, {claim.where})"
    return {n: describe(comparisons[n], readings[n], digits) for n in others}


def seed_spread(table: dict[str, dict], key: str = "test_bleu") -> tuple[float | None, list[str]]:
    """Pooled standard deviation of `key` over configurations run with 2+ seeds."""
    variances, names = [], []
    for name, entry in table.items():
        values = entry["values"].get(key, [])
        if len(values) > 1:
            variances.append(statistics.variance(values))
            names.append(name)
    return (math.sqrt(statistics.fmean(variances)) if variances else None), names


def reached_cell(entry: dict) -> str:
    """Censored updates to the target: "k of n reached" and where, never a mean."""
    if not entry.get("targeted"):
        return "–"
    where = sorted(entry["values"].get("steps_to_target", []))
    text = f"{entry['reached']} of {entry['targeted']} reached"
    return text + (f" (at {', '.join(f'{w:,.0f}' for w in where)})" if where else "")


def cell(entry: dict, key: str, fmt: str) -> str:
    if key == "steps_to_target":
        return reached_cell(entry)
    if key not in entry["stats"]:
        return "–"
    mean, sd = entry["stats"][key]
    return fmt.format(mean) + (f" ± {fmt.format(sd)}" if sd is not None and key not in EXACT else "")
