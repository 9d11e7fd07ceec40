"""The study's report, written from the run records alone (OUT/records/NAME/seedN.json).

    README.md     the tables, galleries, learning curves and AER tables
    results.csv   one row per run (configuration x seed)
    summary.csv   one row per configuration: mean and standard deviation over seeds

Then the index one folder up (benchmarks/attention_study/README.md) is
rewritten from every part's records: nmt.study.index.
"""

import csv
import json
from pathlib import Path
from types import SimpleNamespace

from nmt.atomic import atomic_write
from nmt.study.configs import FAMILIES, StudyConfig, label, study_configs
from nmt.study.gallery import family_grid, learning_curves
from nmt.study.index import cited_pairs, write_index
from nmt.study.ranking import ranking_table, top_three_line
from nmt.study.significance import paired_bootstrap
from nmt.study.tables import COLUMNS, HEAD_COLUMNS, against, aggregate, cell

def family_names(family: str, configs: list[StudyConfig], table: dict) -> list[str]:
    names = []
    for config in configs:
        if config.family == family:
            names += [n for n in (*config.also, config.name) if n in table and n not in names]
    return names


def family_table(family: str, configs: list[StudyConfig], table: dict, runs: list[dict],
                 columns: list, rank_key: str, lower_is_better: bool, tests: dict | None = None) -> list[str]:
    names = family_names(family, configs, table)
    header = ["configuration", "seeds"] + [title for _, title, _ in columns] + [
        f"vs family best ({rank_key}: gap [95% CI], Welch p, Holm over the table)"]
    if tests:
        header.append("paired bootstrap vs best (BLEU difference, p; first seeds)")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    done = [n for n in names if table[n]["n"] and rank_key in table[n]["stats"]]
    sign = 1 if lower_is_better else -1
    best = min(done, key=lambda n: sign * table[n]["stats"][rank_key][0]) if done else None
    readings = against(table, done, best, rank_key, 3 if rank_key != "test_bleu" else 2) if best else {}
    for name in names:
        entry = table[name]
        if not entry["n"]:
            reasons = "; ".join(sorted({r["reason"] for r in runs if r["name"] == name}))
            lines.append(f"| {label(name)} | 0 | {reasons[:200]} |" + " |" * (len(header) - 3))
            continue
        row = [label(name), str(entry["n"])] + [cell(entry, k, f) for k, _, f in columns]
        if name == best:
            row.append("best")
        elif name in readings:
            row.append(readings[name])
        else:
            row.append("–")
        if tests:
            row.append(tests.get(name, "–"))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def head_table(configs: list[StudyConfig], runs: list[dict]) -> list[str]:
    """The Transformers: AER of the shown attention, every head, the mean of heads."""
    out = []
    for config in configs:
        mine = [r for r in runs if r["name"] == config.name and r["eval"] and r["eval"].get("aer_heads")]
        if not mine:
            continue
        out += [f"### {config.name}", "",
                "| seed | shown (last layer, mean of heads) | mean of all layers and heads | each layer's "
                "mean of heads | best head (layer, head from 1) | every head, layer by layer |",
                "|---|---|---|---|---|---|"]
        for run in mine:
            e = run["eval"]
            layers = ", ".join(f"L{i + 1} {v:.3f}" for i, v in enumerate(e["aer_layer_mean"]))
            heads = "; ".join(f"L{i + 1}: " + " ".join(f"{v:.2f}" for v in row)
                              for i, row in enumerate(e["aer_heads"]))
            best = e["best_head"]
            out.append(f"| {run['seed']} | {e['aer']:.3f} | {e['aer_all_heads_mean']:.3f} | {layers} | "
                       f"{e['aer_best_head']:.3f} (L{best[0] + 1} H{best[1] + 1}) | {heads} |")
        out.append("")
    return out


def write_csvs(out_dir: Path, runs: list[dict], table: dict) -> None:
    keys = [k for k, *_ in COLUMNS] + ["valid_bleu", "last_valid_bleu", "best_step", "wall_s",
                                       "train_seconds", "aer_best_head", "aer_all_heads_mean",
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
        writer.writerow(["configuration", "family", "seeds", "reached_target"]
                        + [f"{k}_{s}" for k, *_ in COLUMNS for s in ("mean", "sd")])
        for name, entry in table.items():
            cells = []
            for key, *_ in COLUMNS:
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
                 references: list[str] | None = None) -> str:
    """README.md, results.csv, summary.csv and the pictures in args.out; then the index."""

    out_dir = Path(args.out)
    names = {r["name"] for r in runs}
    configs = [c for c in study_configs(settings["data"]) if c.name in names]
    table = aggregate(runs)
    galleries, curves = render_figures(out_dir, configs, runs, sentences)
    tests = {}      # the paired bootstrap of first seeds ranks nothing: see write_cited_tests
    if settings["data"] != "toy" and references:
        write_cited_tests(out_dir, runs, table, references)
    ranking = ranking_lines(configs, table, runs, settings["data"] == "toy", references)
    text = "\n".join(readme_lines(settings, configs, runs, table, galleries, curves, sentences, tests, args,
                                  ranking))
    (out_dir / "README.md").write_text(text, encoding="utf-8")
    write_csvs(out_dir, runs, table)

    write_index(out_dir.parent)
    return text


def write_cited_tests(out_dir: Path, runs: list[dict], table: dict, references: list[str]) -> None:
    """OUT/paired.json: the paired bootstrap of every pair of configurations whose
    test BLEU the index compares (first seeds), one sacreBLEU test per baseline."""

    first = {r["name"]: r for r in runs if r["eval"] and r["seed"] == r["first_seed"] and r["hypotheses"]}
    by_baseline: dict[str, list[str]] = {}
    for a, b in sorted(cited_pairs(table, runs)):
        if a in first and b in first:
            by_baseline.setdefault(b, []).append(a)
    results = {}
    for baseline, systems in by_baseline.items():
        found = paired_bootstrap(first[baseline]["hypotheses"], [first[a]["hypotheses"] for a in systems],
                                 references)
        results.update({f"{a}|{baseline}": result for a, result in zip(systems, found)})
    atomic_write(out_dir / "paired.json", (json.dumps(results, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def ranking_lines(configs: list[StudyConfig], table: dict, runs: list[dict], toy: bool,
                  references: list[str] | None) -> list[str]:
    """The section "Overall ranking": every trained configuration, first to last
    (nmt.study.ranking), and whether the top three have the seeds they need."""

    rnn = ranking_table(configs, table, toy, transformers=False)
    transformer = ranking_table(configs, table, toy, transformers=True)
    if not rnn and not transformer:
        return []
    how = ("by mean AER (lower first): on this task nearly every configuration reaches test BLEU near 100, "
           "so alignment is what tells them apart" if toy else
           "by mean test BLEU (greedy)")
    guided = (" The guided rows learn their attention from word links of the same kind AER scores ("
              + ("the toy task's true alignment" if toy else "eflomal's, on the training pairs")
              + "), so their AER is taught, not found by the mechanism."
              if any(c.needs_alignments for c in configs) else "")
    lines = ["", "## Overall ranking", "",
             f"Every trained configuration, {how}, the RNN models and the Transformers apart: they have "
             "other budgets, sizes and schedules. The decode-only rows (beam search on bahdanau's "
             "checkpoints) are not ranked: they decode differently, not a different model. A gap is a "
             "finding only where it survives Holm's correction over its table's comparisons at 5% "
             "(\"differs\"); \"no finding\" says the seeds cannot separate the two; rows whose seeds "
             "all gave one value are described (\"equal\" or \"unequal, no spread\"), not tested."
             + guided, ""]
    for title, rows in (("RNN models", rnn), ("Transformers", transformer)):
        if rows:
            lines += [f"### {title}", "", *rows, ""]
    return lines + [top_three_line(configs, table, toy)]


def readme_lines(settings, configs, runs, table, galleries, curves, sentences, tests, args,
                 ranking: list[str] = ()) -> list[str]:
    toy = settings["data"] == "toy"
    finished = [r for r in runs if r["status"] == "finished"]
    sessions = settings.get("sessions", [])
    budget = (f"{settings['budget_minutes']:g} minutes of wall clock per run (trainer.max_minutes)"
              if settings.get("budget_minutes") else
              f"at most {settings['budget_steps']:,} updates per run (trainer.max_steps)")
    if settings.get("transformer_budget_steps") and not settings.get("budget_minutes"):
        budget += f" ({settings['transformer_budget_steps']:,} for the Transformers, slower per update)"
    if settings.get("cap_minutes") and not settings.get("budget_minutes"):
        capped = sorted({f"{r['name']} seed {r['seed']} ({r['eval']['final_step']:,} updates)" for r in runs
                         if r["status"] == "finished" and not settings.get("patience")
                         and r["eval"].get("final_step", 0) < budget_of(r, settings)})
        budget += (f", and {settings['cap_minutes']:g} minutes of wall clock at most, against a hung run "
                   "(trainer.max_minutes): "
                   + (f"cut there: {', '.join(capped)}" if capped else "no run was cut there"))
    if settings.get("patience"):
        budget += (f", stopped {settings['patience']} validations "
                   f"({settings['patience'] * settings['val_every']} updates) after the last improvement")
    cpu = sum(r["eval"]["cpu_minutes"] for r in finished)
    first = finished[0]["eval"] if finished else {}
    target = settings.get("target_bleu")
    sizes = settings["sizes"]
    out = [
        f"# The attention study: {'part 1, the toy task' if toy else 'part 2, Multi30k de→en'}",
        "",
        "Written by `python -m nmt.study` from the run records in `records/` beside this file; do not edit "
        "by hand. Rebuild it (no training) with "
        f"`{rebuild_command(settings, args.out)}`.",
        "",
        f"- Data: {settings['data_description']}",
        f"- Budget: {budget}; validation on the first {settings['val_sentences']} validation sentences "
        f"(greedy) every {settings['val_every']} updates; the checkpoint with the best validation BLEU "
        "(the first, among equals) is evaluated",
        f"- Runs: {len(finished)} of {len(runs)} finished, one thread each; cost "
        f"{cpu:.1f} CPU-minutes in all ({cpu / 60:.2f} CPU-hours: training and evaluation, wall clock "
        "of each run on its one thread)",
        f"- Test: {first.get('test_sentences', '?')} sentences of "
        f"{'the toy test set' if toy else 'test_2016_flickr'}, "
        f"{'greedy' if settings['beam_size'] == 1 else 'beam ' + str(settings['beam_size'])}; "
        f"sacreBLEU `{first.get('bleu_signature', '?')}`",
        *([] if toy else [base_line(table)]),
        "- Sessions (each command that trained runs; a finished run is never trained again):",
        *[f"  - {s['date']}, commit `{s['commit']}`, {s['machine']}, {s['jobs']} jobs: `{s['command']}` "
          f"({s['runs']} runs to train)" for s in sessions],
        "",
        "## How the figures are read",
        "",
        "- **updates to target**: the first validation (every "
        f"{settings['val_every']} updates) whose BLEU reached {target:g}; a run that never reached it counts "
        "as its last update (a lower bound, marked ≥)" if target else
        "- **updates to target**: not used for this data",
        "- **test BLEU**, **chrF**: the evaluated checkpoint on the test set.",
        "- **AER** (Och and Ney 2003): 1 − (|A∩S| + |A∩P|)/(|A| + |S|) with S = P = "
        + ("the toy task's true word alignment (`nmt.data.toy.toy_alignment`): gold links"
           if toy else ("silver links from a statistical aligner (eflomal, grow-diag-final-and), not gold"
                        if settings.get("links") else "no reference links given: AER not measured"))
        + ". A is read from the attention while the model reads the test reference (teacher forcing): "
        "each target subword links to its arg-max source subword, and two words are linked when any of "
        "their subwords are (`nmt.study.alignment`); counts are summed over the test set. Lower is "
        "better; 0 is a perfect alignment. Transformers: the attention shown is the last decoder "
        "layer's cross-attention, mean of its heads; *AER best head* is each seed's best single head "
        "(of every layer), *AER mean of all heads* that of the weights averaged over every layer and "
        "head; every head is in the table at the end.",
        "- **entropy**: mean entropy of the attention distributions (nats; lower is sharper).",
        "- **train tok/s**, **CPU-min**: speed on a machine shared with other work; compare "
        "with care.",
        "- Mean ± standard deviation over seeds. **vs family best**: the gap of the mean to the family's "
        "best, and whether Welch's t-test over the seeds finds it at the 5% level (|gap| > t·√(s₁²/n₁ + "
        "s₂²/n₂), t at the Welch–Satterthwaite degrees of freedom: 12.7 for two seeds each, 2.8 to 4.3 "
        "for three) (\"clearly\"); only such gaps are read as rankings.",
        "",
        "## Setup",
        "",
        f"Every RNN run is a bidirectional GRU encoder (hidden {sizes['enc_hidden']} per direction, states "
        f"of {2 * sizes['enc_hidden']}) under a Luong-style GRU decoder of hidden {2 * sizes['enc_hidden']} "
        f"with input feeding, embeddings {sizes['embed']}, Adam lr {sizes['lr']}, constant schedule, bridge "
        "`last`, attention `luong_general`, global scope; each family changes one part. The LSTMN encoder "
        f"gets one direction of the same state size. The Transformers are {sizes['layers']}+"
        f"{sizes['layers']} layers, d {sizes['d_model']}, {sizes['heads']} heads, ff {sizes['ff']}, "
        f"inverse-sqrt schedule (warm-up {sizes['warmup']}, peak lr {sizes['transformer_lr']}).",
        *ranking,
    ]
    rank_key, lower = ("aer", True) if toy else ("test_bleu", False)
    columns = [c for c in COLUMNS if toy or c[0] != "steps_to_target"]
    for family, title in FAMILIES.items():
        if not family_names(family, configs, table):
            continue
        names = family_names(family, configs, table)
        mine = columns
        if any(r["eval"] and r["eval"].get("aer_heads") for r in runs if r["name"] in names):
            at = [k for k, *_ in columns].index("aer") + 1
            mine = columns[:at] + HEAD_COLUMNS + columns[at:]
        out += ["", f"## {title}", ""]
        if any(c.decode_of for c in configs if c.family == family):
            out += [decoding_note([c for c in configs if c.family == family], runs), ""]
        out += family_table(family, configs, table, runs, mine, rank_key, lower, tests)
        if family in galleries:
            out += ["", f"![{title}: attention gallery]({galleries[family]})"]
        if family in curves:
            out += ["", f"![{title}: learning curves]({curves[family]})"]
    heads = head_table(configs, runs)
    if heads:
        out += ["", "## Transformer heads: AER of every layer and head", "",
                "Heads are not comparable across seeds (any permutation of heads is the same model), so "
                "each seed is its own row; the best head is the best of that seed.", "", *heads]
    out += ["", "## Gallery sentences", "",
            "The same validation sentences in every gallery; each panel is the model's own greedy output "
            "(down) attending to the source subwords (across), first seed:", ""]
    out += [f"{i + 1}. {src} → {tgt}" for i, (src, tgt) in enumerate(sentences)]
    failed = [r for r in runs if r["status"] != "finished"]
    out += ["", "## Runs not finished", ""]
    out += ([f"- {r['name']} seed {r['seed']}: {r['reason']}" for r in failed] if failed else ["None."])
    out += ["", "## Files", "", "- `records/NAME/seedN.json`: each run's record (commit it; the report is "
            "rebuilt from these alone); `results.csv`: one row per run; `summary.csv`: one row per "
            "configuration; `study.json`: the settings and every session's command.", ""]
    return out


def decoding_note(configs: list[StudyConfig], runs: list[dict]) -> str:
    """What the decode-only rows are, in one paragraph above their table."""
    rows = [c for c in configs if c.decode_of]
    differ = sorted({f"{r['name']} seed {r['seed']}" for r in runs if r.get("same_checkpoint") is False})
    beta = next((c.coverage_penalty for c in rows if c.coverage_penalty), None)
    return ("No training: each row decodes the test set again from the checkpoint of the run it names "
            f"({', '.join(sorted({c.decode_of for c in rows}))}, same seeds), with beam {rows[0].beam_size} "
            "and the length penalty at its default (α = 1), without and with the coverage penalty of Wu et al. "
            "2016, Sec. 7: cp = β · Σᵢ log(min(Σₜ aₜᵢ, 1))" + (f", β = {beta:g}" if beta else "") + ". It "
            "only re-ranks the beam's finished hypotheses, so the attention read on the reference is the "
            "trained run's: AER and entropy are its figures by construction; test BLEU and chrF are what "
            "the penalty changes. CPU-min counts the decoding only."
            + (f" Not the checkpoint of the trained row (its folder was trained again since, and its figures "
               f"differ): {', '.join(differ)}." if differ else "")) if rows else ""


def budget_of(run: dict, settings: dict) -> int:
    """A run's update budget: the Transformers' own where the study gave one."""
    return (settings.get("transformer_budget_steps") or settings["budget_steps"]) if run.get("transformer") \
        else settings["budget_steps"]


def rebuild_command(settings: dict, out) -> str:
    """The command that rewrites this report: Multi30k's needs the data (test
    references for the paired tests) and the links the study was given."""
    import shlex

    words = ["python", "-m", "nmt.study", "--report-only", "--data", settings["data"], "--out", str(out)]
    for option, key in (("--data-path", "data_path"), ("--links", "links"), ("--train-links", "train_links")):
        if settings.get(key):
            words += [option, settings[key]]
    return shlex.join(words)


def base_line(table: dict) -> str:
    """Multi30k: does the base configuration reach the issue's 20 test BLEU (greedy) on this budget?"""
    entry = table.get("luong_general")
    if not entry or "test_bleu" not in entry["stats"]:
        return ("- Budget check: the base configuration (luong_general) has not run, so whether this budget "
                "reaches 20 test BLEU (greedy) is not known")
    mean = entry["stats"]["test_bleu"][0]
    return (f"- Budget check: the base configuration (luong_general) reached {mean:.2f} test BLEU over "
            f"{entry['n']} seed(s), {'at least' if mean >= 20 else 'below'} the 20 (greedy) the study's budget "
            f"is meant to allow" + ("" if mean >= 20 else ": this budget is too small for a ranking that means much"))


def load_json(path: Path) -> dict:
    return json.loads(Path(path).read_text()) if Path(path).exists() else {}
