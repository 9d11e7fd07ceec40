"""The study's report: README.md and two CSV files, written from the run folders.

    results.csv   one row per run (configuration x seed)
    summary.csv   one row per configuration: mean and standard deviation over seeds
"""

import csv
import json
import math
import statistics
from pathlib import Path

from nmt.study.configs import FAMILIES, StudyConfig, label
from nmt.study.metrics import read_metrics
from nmt.study.runner import failure_reason, run_dir_of, status

# (key in study_eval.json, column title, format, higher is better?)
COLUMNS = [
    ("parameters", "parameters", "{:,.0f}"),
    ("test_bleu", "BLEU", "{:.2f}"),
    ("test_chrf", "chrF", "{:.2f}"),
    ("valid_perplexity", "valid ppl", "{:.2f}"),
    ("tokens_per_s", "train tok/s", "{:,.0f}"),
    ("sentences_per_s", "decode sent/s", "{:.1f}"),
    ("entropy", "entropy (nats)", "{:.2f}"),
    ("peak_agreement", "peak on reference (%)", "{:.1f}"),
    ("final_step", "steps", "{:,.0f}"),
]
PERCENT = {"peak_agreement"}
EXACT = {"parameters"}   # the same for every seed: no ± shown


def collect(runs_dir: Path, configs: list[StudyConfig], seeds: dict[str, list[int]]) -> list[dict]:
    """One dict per planned run: name, family, seed, status, eval, records, reason."""
    runs = []
    for config in configs:
        for seed in seeds[config.name]:
            run_dir = run_dir_of(runs_dir, config.name, seed)
            state = status(run_dir)
            evaluation = None
            eval_path = run_dir / "study_eval.json"
            if state == "finished":
                if eval_path.exists():
                    evaluation = json.loads(eval_path.read_text())
                else:
                    state = "failed"
            reason = failure_reason(run_dir) if state != "finished" else ""
            if state == "failed" and (run_dir / "study_eval_failed.txt").exists():
                reason = (run_dir / "study_eval_failed.txt").read_text().splitlines()[0]
            runs.append({"name": config.name, "family": config.family, "seed": seed,
                         "first_seed": seeds[config.name][0], "status": state, "eval": evaluation,
                         "records": read_metrics(run_dir) if run_dir.exists() else [],
                         "reason": reason, "run_dir": run_dir})
    return runs


def aggregate(runs: list[dict]) -> dict[str, dict]:
    """name -> {n, key: (mean, sd or None)} over the finished seeds."""
    table = {}
    for run in runs:
        entry = table.setdefault(run["name"], {"n": 0, "values": {}, "family": run["family"]})
        if run["eval"] is None:
            continue
        entry["n"] += 1
        for key, *_ in COLUMNS:
            value = run["eval"].get(key)
            if value is not None:
                entry["values"].setdefault(key, []).append(float(value) * (100 if key in PERCENT else 1))
    for entry in table.values():
        entry["stats"] = {k: (statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else None)
                          for k, v in entry["values"].items()}
    return table


def seed_spread(table: dict[str, dict]) -> tuple[float | None, list[str]]:
    """Pooled standard deviation of test BLEU over configurations run with 2+ seeds."""
    variances, names = [], []
    for name, entry in table.items():
        values = entry["values"].get("test_bleu", [])
        if len(values) > 1:
            variances.append(statistics.variance(values))
            names.append(name)
    return (math.sqrt(statistics.fmean(variances)) if variances else None), names


def _cell(stats: dict, key: str, fmt: str) -> str:
    if key not in stats:
        return "–"
    mean, sd = stats[key]
    if math.isnan(mean):
        return "–"
    text = fmt.format(mean)
    return f"{text} ± {fmt.format(sd)}" if sd is not None and key not in EXACT else text


def family_table(family: str, configs: list[StudyConfig], table: dict, runs: list[dict],
                 spread: float | None) -> list[str]:
    names = []
    for config in configs:
        if config.family == family:
            names += [n for n in config.also if n in table and n not in names]
            names.append(config.name)
    header = ["configuration", "seeds"] + [title for _, title, _ in COLUMNS]
    if spread is not None:
        header.append("gap to best > spread?")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    finished = [n for n in names if table[n]["n"]]
    best = max(finished, key=lambda n: table[n]["stats"]["test_bleu"][0]) if finished else None
    for name in names:
        entry = table[name]
        if not entry["n"]:
            reasons = "; ".join(r["reason"] for r in runs if r["name"] == name)
            lines.append(f"| {label(name)} | 0 | failed: {reasons[:200]} |" + " |" * (len(header) - 3))
            continue
        row = [label(name), str(entry["n"])] + [_cell(entry["stats"], k, f) for k, _, f in COLUMNS]
        if spread is not None:
            gap = table[best]["stats"]["test_bleu"][0] - entry["stats"]["test_bleu"][0]
            row.append("best" if name == best else
                       (f"yes ({gap:.2f})" if gap > 2 * math.sqrt(2) * spread else f"no ({gap:.2f})"))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def write_csvs(out_dir: Path, runs: list[dict], table: dict) -> None:
    keys = [k for k, *_ in COLUMNS] + ["valid_bleu", "best_step", "wall_s", "train_seconds",
                                       "alignment_reference", "alignment_tokens", "test_sentences",
                                       "beam_size", "bleu_signature", "chrf_signature"]
    with open(out_dir / "results.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["configuration", "family", "seed", "status"] + keys + ["reason"])
        for run in runs:
            values = [(run["eval"] or {}).get(k, "") for k in keys]
            writer.writerow([run["name"], run["family"], run["seed"], run["status"], *values,
                             run["reason"]])
    with open(out_dir / "summary.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["configuration", "family", "seeds"]
                        + [f"{k}_{s}" for k, *_ in COLUMNS for s in ("mean", "sd")])
        for name, entry in table.items():
            cells = []
            for key, *_ in COLUMNS:
                mean, sd = entry.get("stats", {}).get(key, (None, None))
                cells += ["" if mean is None else f"{mean:.4g}", "" if sd is None else f"{sd:.4g}"]
            writer.writerow([name, entry["family"], entry["n"], *cells])


def write_readme(out_dir: Path, settings: dict, configs: list[StudyConfig], runs: list[dict],
                 figures: dict[str, str], learning_png: str | None, sentences: list[tuple[str, str]]) -> str:
    table = aggregate(runs)
    spread, spread_names = seed_spread(table)
    toy = settings["data"] == "toy"
    finished = sum(r["status"] == "finished" for r in runs)
    budget = (f"{settings['budget_minutes']:g} minutes of wall clock per run (trainer.max_minutes, "
              "validations included)" if settings.get("budget_minutes")
              else f"{settings['budget_steps']} optimiser steps per run (trainer.max_steps)")
    first = next((r["eval"] for r in runs if r["eval"]), {})
    out = [
        "# The attention study",
        "",
        "Written by `python -m nmt.study` from the run folders; do not edit by hand, rerun it.",
        "",
        f"- Date: {settings['date']}",
        f"- Machine: {settings['machine']}",
        f"- Command: `{settings['command']}`",
        f"- Commit: `{settings['commit']}` (training); report written at `{settings.get('report_commit', '?')}`",
        f"- Data: {settings['data_description']}",
        f"- Budget: {budget}; seeds {', '.join(map(str, settings['seeds']))}"
        + (f" (second seed {', '.join(map(str, settings['spread_seeds']))} for {', '.join(settings['spread'])})"
           if settings.get("spread") else ""),
        f"- Runs: {finished} of {len(runs)} finished; run folders under `{settings['runs_dir']}`",
        f"- Validation during training: the first {settings['val_sentences']} validation sentences, "
        f"greedy, every {settings['val_every']} steps; the checkpoint with the best validation BLEU is evaluated.",
        f"- Test: {first.get('test_sentences', '?')} sentences of "
        f"{'the toy test set' if toy else 'test_2016_flickr'}, "
        f"{'greedy' if settings['beam_size'] == 1 else 'beam ' + str(settings['beam_size'])}; "
        f"sacreBLEU `{first.get('bleu_signature', '?')}`, chrF `{first.get('chrf_signature', '?')}`",
        "",
        "## Setup",
        "",
        "Every RNN run is a bidirectional GRU encoder (hidden "
        f"{settings['sizes']['enc_hidden']} per direction, states of {2 * settings['sizes']['enc_hidden']}) "
        f"under a Luong-style GRU decoder of hidden {2 * settings['sizes']['enc_hidden']} with input feeding, "
        f"embeddings {settings['sizes']['embed']}, Adam lr {settings['sizes']['lr']}, constant schedule, "
        "bridge `last`, attention `luong_general`, global scope; each family changes one part. Query and "
        "key sizes are equal, so `luong_dot` and `scaled_dot` are valid. The decoder style stays Luong "
        "for every score (Bahdanau's score included) so that only the score changes. The LSTMN encoder "
        "gets one direction of the same state size. The Transformers are "
        f"{settings['sizes']['layers']}+{settings['sizes']['layers']} layers, d {settings['sizes']['d_model']}, "
        f"{settings['sizes']['heads']} heads, ff {settings['sizes']['ff']}, pre-norm, inverse-sqrt schedule "
        f"(warm-up {settings['sizes']['warmup']}, peak lr {settings['sizes']['transformer_lr']}); "
        "their heatmaps and figures use the mean over heads of the last cross-attention layer.",
        "",
        "Columns: parameters (trainable); BLEU and chrF on the test set; valid ppl, the validation "
        "perplexity of the evaluated checkpoint (teacher forcing, no label smoothing); train tok/s, "
        "target tokens per second of training; decode sent/s, test sentences per second (batch 64, "
        "this machine, while it was shared); entropy, the mean over target tokens of the entropy of the "
        "attention distribution (nats; lower is sharper) while the model reads the test reference "
        "(teacher forcing); peak on reference, the share of reference target tokens whose attention "
        + ("peak (source word of the arg-max subword) is the source word the true toy alignment "
           "(`nmt.data.toy.toy_alignment`) points to"
           if toy else
           "peak (arg-max source subword) lies on the position the monotone diagonal points to: target "
           "subword t of T (from 0) -> source subword round(t·S/T) (halves up) of S. There is no "
           "gold alignment for Multi30k, so this measures monotonicity, not correctness: German and "
           "English captions are close to monotone, but a perfect aligner would not score 100")
        + "; steps, optimiser updates done in the budget. Mean ± standard deviation over seeds where "
        "there is more than one.",
        *(["", "A wall-clock budget rewards fast configurations, as intended, but on a shared machine it "
           "also measures how busy the machine was during each run: read BLEU together with the steps "
           "and train tok/s columns, and compare learning curves against steps as well as time."]
          if settings.get("budget_minutes") else []),
        "",
        "## Seed-to-seed spread",
        "",
    ]
    if spread is None:
        out.append("Not measured: every configuration was run with one seed, so no difference below "
                   "can be told apart from seed noise.")
    else:
        out.append(f"Pooled standard deviation of test BLEU over the configurations run with several "
                   f"seeds ({', '.join(spread_names)}): s = {spread:.2f} BLEU. A gap between two single "
                   f"runs counts as larger than the spread when it exceeds 2·√2·s = {2 * math.sqrt(2) * spread:.2f} "
                   "BLEU (two standard deviations of a difference of two runs); the last column says "
                   "which configurations trail their family's best by more than that.")
        out += ["", *spread_findings(configs, table, spread)]
    for family, title in FAMILIES.items():
        if not any(c.family == family for c in configs):
            continue
        out += ["", f"## {title}", "", *family_table(family, configs, table, runs, spread)]
        if family in figures:
            out += ["", f"Attention gallery: [{figures[family]}]({figures[family]})", "",
                    f"![{title}]({figures[family]})"]
    out += ["", "## Learning curves", ""]
    if learning_png:
        out += [f"Validation BLEU against steps and against training seconds, every run: "
                f"[{learning_png}]({learning_png})", "", f"![learning curves]({learning_png})"]
    out += ["", "## Gallery sentences", "", "The same validation sentences in every gallery:", ""]
    out += [f"{i + 1}. {src} → {tgt}" for i, (src, tgt) in enumerate(sentences)]
    failed = [r for r in runs if r["status"] != "finished"]
    out += ["", "## Failed runs", ""]
    out += ([f"- {r['name']} seed {r['seed']}: {r['reason']}" for r in failed] if failed else ["None."])
    out += ["", "## Files", "", "- `results.csv`: one row per run; `summary.csv`: one row per configuration.",
            f"- Regenerate this page from the run folders: `{settings['report_command']}`", ""]
    text = "\n".join(out)
    (out_dir / "README.md").write_text(text, encoding="utf-8")
    write_csvs(out_dir, runs, table)
    return text


def spread_findings(configs: list[StudyConfig], table: dict, spread: float) -> list[str]:
    """One line per family: which gaps to the family's best exceed 2·√2·s."""
    threshold, lines = 2 * math.sqrt(2) * spread, []
    for family, title in FAMILIES.items():
        names = []
        for config in configs:
            if config.family == family:
                names += [n for n in (*config.also, config.name) if n in table and n not in names]
        done = [n for n in names if table[n]["n"]]
        if len(done) < 2:
            continue
        best = max(done, key=lambda n: table[n]["stats"]["test_bleu"][0])
        behind = [n for n in done if n != best
                  and table[best]["stats"]["test_bleu"][0] - table[n]["stats"]["test_bleu"][0] > threshold]
        within = [n for n in done if n != best and n not in behind]
        lines.append(f"- {title}: best {best}; clearly behind it: {', '.join(behind) or 'none'}; "
                     f"within the spread: {', '.join(within) or 'none'}.")
    return lines
