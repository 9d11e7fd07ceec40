"""The study's report, written from the run records alone (OUT/records/NAME/seedN.json).

    README.md     the tables, galleries, learning curves and AER tables
    results.csv   one row per run (configuration x seed)
    summary.csv   one row per configuration: mean and standard deviation over seeds
    paired.json   the paired bootstraps between seeds of one configuration (test-set noise)

Then the index one folder up (benchmarks/attention_study/README.md) is
rewritten from every part's records: nmt_study.index.
"""

import csv
import json
from pathlib import Path
from types import SimpleNamespace

from nmt import atomic_write
from nmt_study.alignment_table import alignment_lines, baseline_note, eflomal_quality
from nmt_study.baselines import baseline_counts
from nmt_study.configs import (CONFIRMATION_FOLDER, CONVERGENCE_FOLDER, FAMILIES, StudyConfig, is_convergence_folder,
                               label, study_configs)
from nmt_study.confirmation_report import confirmation_lines
from nmt_study.convergence import check_pointer_lines, confirmation_pointer_lines, convergence_lines
from nmt_study.findings import declared
from nmt_study.gallery import family_grid, learning_curves
from nmt_study.index import write_index
from nmt_study.provenance import commit_lines, equivalence_lines, reproduction_lines
from nmt_study.ranking import against_first_of_each, ranking_table, seed_plan_line
from nmt_study.report_header import decoding_note, header_lines, how_read_lines, setup_lines
from nmt_study.significance import noise_line, seed_pair_noise
from nmt_study.tables import COLUMNS, HEAD_COLUMNS, aggregate, cell


def family_names(family: str, configs: list[StudyConfig], table: dict) -> list[str]:
    names = []
    for config in configs:
        if config.family == family:
            names += [n for n in (*config.also, config.name) if n in table and n not in names]
    return names


def family_table(family: str, configs: list[StudyConfig], table: dict, runs: list[dict],
                 columns: list, rank_key: str, lower_is_better: bool, declared: dict | None = None) -> list[str]:
    """A family's rows against its best of the same architecture (RNNs and
    Transformers are never one Holm family); a claimed comparison shows its
    claim's decision (`declared`)."""
    names = family_names(family, configs, table)
    header = ["configuration", "seeds"] + [title for _, title, _ in columns] + [
        f"vs family best of its architecture ({rank_key}: gap [95% CI], Welch p, Holm over the table)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    sign = 1 if lower_is_better else -1
    done = sorted((n for n in names if table[n]["n"] and rank_key in table[n]["stats"]),
                  key=lambda n: sign * table[n]["stats"][rank_key][0])
    transformer = {c.name: c.transformer for c in configs}
    best, readings = against_first_of_each(table, done, transformer, rank_key,
                                           3 if rank_key != "test_bleu" else 2, declared) if done else (set(), {})
    for name in names:
        entry = table[name]
        if not entry["n"]:
            reasons = "; ".join(sorted({r["reason"] for r in runs if r["name"] == name}))
            lines.append(f"| {label(name)} | 0 | {reasons[:200]} |" + " |" * (len(header) - 3))
            continue
        row = [label(name), str(entry["n"])] + [cell(entry, k, f) for k, _, f in columns]
        if name in best:
            row.append("best")
        elif name in readings:
            row.append(readings[name])
        else:
            row.append("–")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def head_table(configs: list[StudyConfig], runs: list[dict]) -> list[str]:
    """The Transformers: AER of the shown attention, every head, the mean of
    heads, and the head chosen on the validation set (scored on test)."""
    out = []
    for config in configs:
        mine = [r for r in runs if r["name"] == config.name and r["eval"] and r["eval"].get("aer_heads")]
        if not mine:
            continue
        out += [f"### {config.name}", "",
                "| seed | shown (last layer, mean of heads) | mean of all layers and heads | each layer's "
                "mean of heads | head chosen on valid (layer, head from 1): test AER | every head, layer by layer |",
                "|---|---|---|---|---|---|"]
        for run in mine:
            e = run["eval"]
            layers = ", ".join(f"L{i + 1} {v:.3f}" for i, v in enumerate(e["aer_layer_mean"]))
            heads = "; ".join(f"L{i + 1}: " + " ".join(f"{v:.2f}" for v in row)
                              for i, row in enumerate(e["aer_heads"]))
            chosen = (f"{e['aer_head_valid']:.3f} (L{e['head_valid_cell'][0] + 1} H{e['head_valid_cell'][1] + 1})"
                      if e.get("aer_head_valid") is not None else "no validation links")
            out.append(f"| {run['seed']} | {e['aer']:.3f} | {e['aer_all_heads_mean']:.3f} | {layers} | "
                       f"{chosen} | {heads} |")
        out.append("")
    return out


def write_csvs(out_dir: Path, runs: list[dict], table: dict) -> None:
    keys = [k for k, *_ in COLUMNS] + ["valid_bleu", "last_valid_bleu", "best_step", "wall_s",
                                       "train_seconds", "aer_head_valid", "aer_all_heads_mean", "precision",
                                       "recall", "aer_linked", "aer_shift", "aer_head_valid_shift",
                                       "aer_links", "aer_skipped", "test_sentences", "beam_size",
                                       "bleu_signature", "chrf_signature"]
    with open(out_dir / "results.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["configuration", "family", "seed", "status"] + keys + ["reason"])
        for run in runs:
            values = [(run["eval"] or {}).get(k, "") for k in keys]
            writer.writerow([run["name"], run["family"], run["seed"], run["status"], *values,
                             "" if run["status"] == "finished" else run["reason"]])
    with open(out_dir / "summary.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        averaged = [k for k, *_ in COLUMNS if k != "steps_to_target"]    # censored: never averaged
        writer.writerow(["configuration", "family", "seeds", "reached_target"]
                        + [f"{k}_{s}" for k in averaged for s in ("mean", "sd")])
        for name, entry in table.items():
            cells = []
            for key in averaged:
                mean, sd = entry["stats"].get(key, (None, None))
                cells += ["" if mean is None else f"{mean:.4g}", "" if sd is None else f"{sd:.4g}"]
            writer.writerow([name, entry["family"], entry["n"], entry["reached"], *cells])


def render_figures(out_dir: Path, configs: list[StudyConfig], runs: list[dict],
                   sentences: list[tuple[str, str]]) -> tuple[dict, dict]:
    """One gallery and one learning-curve figure per family, from the records."""

    galleries, curves = {}, {}
    panels = {r["name"]: r["gallery"] for r in runs
              if r["status"] == "finished" and r["seed"] == r["first_seed"] and r["gallery"]}
    table = aggregate(runs)
    for family, title in FAMILIES.items():
        if all(c.decode_of for c in configs if c.family == family):
            continue        # decode-only rows: the same model as the run they decode, same curve
        names = family_names(family, configs, table)
        shown = [n for n in names if n in panels and len(panels[n]) == len(sentences)]
        if shown:
            rows = []
            for n in shown:
                entry = table[n]
                text = label(n)
                if "aer" in entry["stats"]:
                    text += f"\nAER {entry['stats']['aer'][0]:.2f}"
                rows.append((text, [SimpleNamespace(**p) for p in panels[n]]))
            galleries[family] = f"gallery_{family}.png"
            family_grid(rows, sentences, title, out_dir / galleries[family])
        mine = [r for r in runs if r["name"] in names and r["records"]]
        if mine:
            curves[family] = f"curves_{family}.png"
            learning_curves(mine, out_dir / curves[family], title, names)
    return galleries, curves


def write_report(args, settings: dict, runs: list[dict], sentences: list[tuple[str, str]],
                 test: list[tuple[str, str]] | None = None, links: list | None = None) -> str:
    """README.md, results.csv, summary.csv and the pictures in args.out; then the
    index. `test` and `links`: the test pairs and their reference links, for
    the AER baselines (none without them) and the test-set noise (Multi30k)."""
    out_dir = Path(args.out)
    names = {r["name"] for r in runs}
    toy, check = settings["data"] == "toy", is_convergence_folder(out_dir)
    configs = [c for c in study_configs(settings["data"]) if c.name in names]
    table = aggregate(runs)
    galleries, curves = render_figures(out_dir, configs, runs, sentences)
    baselines = baseline_counts(test, links) if test and links else None
    note = baseline_note(baselines or {}, table)
    confirming = out_dir.name == CONFIRMATION_FOLDER
    text = "\n".join([
        *header_lines(settings, runs, table, args.out), *(confirmation_lines(runs) if confirming else []),
        *how_read_lines(settings), *setup_lines(settings["sizes"]),
        *ranking_lines(configs, table, toy, CONVERGENCE_FOLDER if check else settings["data"]),
        *(["", note] if note else []),
        *alignment_lines(configs, table, baselines, eflomal_quality(out_dir.parent), toy),
        *([] if toy or not test else noise_lines(out_dir, runs, [t for _, t in test])),
        *family_sections(configs, runs, table, galleries, curves, toy, note,
                         CONVERGENCE_FOLDER if check else settings["data"]),
        *([] if toy else check_pointer_lines() if check else confirmation_pointer_lines() if confirming
          else convergence_lines(out_dir, table)),
        *commit_lines(runs), *equivalence_lines(out_dir), *reproduction_lines(out_dir), *tail_lines(runs, sentences)])
    (out_dir / "README.md").write_text(text, encoding="utf-8")
    write_csvs(out_dir, runs, table)
    write_index(out_dir.parent)
    return text


def noise_lines(out_dir: Path, runs: list[dict], references: list[str]) -> list[str]:
    """The section on test-set noise: the paired bootstrap between seeds of one configuration."""
    path = out_dir / "paired.json"
    cache = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    cache = {k: v for k, v in cache.items() if k.count("|") == 2}       # name|seed|seed entries only
    results = seed_pair_noise(runs, references, cache)
    atomic_write(path, (json.dumps(cache, indent=1, sort_keys=True) + "\n").encode("utf-8"))
    return ["", "## Test-set noise", "", noise_line(results)]


def ranking_lines(configs: list[StudyConfig], table: dict, toy: bool, part: str) -> list[str]:
    """The section "Overall ranking": every trained configuration, first to last
    (nmt_study.ranking), RNN and Transformer apart, and on the toy task the
    guided rows apart; then whether every row has its planned seeds."""
    claimed = declared(table, part)
    tables = [("RNN models", ranking_table(configs, table, toy, transformers=False, declared=claimed)),
              ("Transformers", ranking_table(configs, table, toy, transformers=True, declared=claimed)),
              ("Guided rows (taught the true links: their AER is not found by the mechanism)",
               ranking_table(configs, table, toy, transformers=False, guided=True, declared=claimed) if toy else [])]
    if not any(rows for _, rows in tables):
        return []
    how = ("by mean AER (lower first): on this task nearly every configuration reaches test BLEU near 100, "
           "so alignment is what tells them apart" if toy else "by mean test BLEU (greedy)")
    guided = ("" if toy or not any(c.needs_alignments for c in configs) else
              " The guided rows learn their attention from eflomal's links on the training pairs, the same "
              "kind AER scores, so their AER is taught, not found by the mechanism.")
    lines = ["", "## Overall ranking", "",
             f"Every trained configuration, {how}, the RNN models and the Transformers apart: they have "
             "other budgets, sizes and schedules. The decode-only rows (beam search on bahdanau's "
             "checkpoints) are not ranked: they decode differently, not a different model. A gap is a "
             "finding only where it survives Holm's correction over its table's comparisons at 5% "
             "(\"differs\"), except a comparison a paper's claim declares: it shows that claim's decision, "
             "tested once in its own family (marked \"claim: ...\"); \"no finding\" says the seeds cannot "
             "separate the two; rows whose seeds "
             "all gave one value are described (\"equal\" or \"unequal, no spread\"), not tested." + guided, ""]
    for title, rows in tables:
        if rows:
            lines += [f"### {title}", "", *rows, ""]
    return lines + [seed_plan_line(configs, table, part)]


def family_sections(configs, runs, table, galleries, curves, toy: bool, note: str = "",
                    part: str = "") -> list[str]:
    """One section per family: its table against the family's best (and the
    AER baselines under it, `note`), gallery, curves; then the heads. `part`
    (toy, multi30k): whose claims' decisions the tables show."""
    rank_key, lower = ("aer", True) if toy else ("test_bleu", False)
    claimed = declared(table, part)
    columns = [c for c in COLUMNS if toy or c[0] != "steps_to_target"]
    out = []
    for family, title in FAMILIES.items():
        names = family_names(family, configs, table)
        if not names:
            continue
        mine = columns
        if any(r["eval"] and r["eval"].get("aer_heads") for r in runs if r["name"] in names):
            at = [k for k, *_ in columns].index("aer") + 1
            mine = columns[:at] + HEAD_COLUMNS + columns[at:]
        out += ["", f"## {title}", ""]
        if any(c.decode_of for c in configs if c.family == family):
            out += [decoding_note([c for c in configs if c.family == family], runs), ""]
        out += family_table(family, configs, table, runs, mine, rank_key, lower, claimed)
        out += ["", note] if note else []
        if family in galleries:
            out += ["", f"![{title}: attention gallery]({galleries[family]})"]
        if family in curves:
            out += ["", f"![{title}: learning curves]({curves[family]})"]
    heads = head_table(configs, runs)
    if heads:
        out += ["", "## Transformer heads: AER of every layer and head", "",
                "Heads are not comparable across seeds (any permutation of heads is the same model), so "
                "each seed is its own row; the head is chosen on that seed's validation counts.", "", *heads]
    return out


def tail_lines(runs: list[dict], sentences: list[tuple[str, str]]) -> list[str]:
    failed = [r for r in runs if r["status"] != "finished"]
    return ["", "## Gallery sentences", "",
            "The same validation sentences in every gallery; each panel is the model's own greedy output "
            "(down) attending to the source subwords (across), first seed:", "",
            *[f"{i + 1}. {src} → {tgt}" for i, (src, tgt) in enumerate(sentences)],
            "", "## Runs not finished", "",
            *([f"- {r['name']} seed {r['seed']}: {r['reason']}" for r in failed] if failed else ["None."]),
            "", "## Files", "", "- `records/NAME/seedN.json`: each run's record (commit it; the report is "
            "rebuilt from these alone); `results.csv`: one row per run; `summary.csv`: one row per "
            "configuration; `study.json`: the settings and every session's command.", ""]

