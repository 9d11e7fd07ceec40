"""benchmarks/attention_study/README.md: the index over the study's parts,
with "What the papers found, and what we find", written from the records.

The papers' claims are data (nmt_study.claims) rendered by one function
(nmt_study.findings): exact Welch p over the seeds, Holm's correction over
each section's comparisons, the 95% interval of each gap, and the decision
in plain words.
"""

import json
import statistics
from pathlib import Path

from nmt_study.alignment_table import baseline_note, eflomal_quality
from nmt_study.configs import CONFIRMATION, CONFIRMATION_FOLDER, CONVERGENCE, CONVERGENCE_FOLDER, study_configs
from nmt_study.confirmation_report import confirmed_summary
from nmt_study.lr_sweep_report import lr_sweep_item
from nmt_study.claims import CLAIMS, FAMILIES_CHANGED, FIRST_GROUPING
from nmt_study.findings import MEASURES, declared, findings, grouping_changes
from nmt_study.papers import PAPERS
from nmt_study.ranking import ranking_table, seed_plan_line
from nmt_study.report_header import portable_command
from nmt_study.runner import record_done
from nmt_study.tables import aggregate, cell, collect

PARTS = {"toy": "Part 1: the toy task (true alignment known)", "multi30k": "Part 2: Multi30k de→en"}
# Superseded rounds left the working tree; git history keeps them at this commit.
SUPERSEDED = "superseded_2026-11-23_1.5min"
SUPERSEDED_AT = "2ccdd218e3d8"


def part_table(folder: Path, data: str) -> tuple[dict, list[dict], dict]:
    """(table, runs, settings) of one part's records; empty where it has not run."""
    path = Path(folder) / "study.json"
    settings = json.loads(path.read_text()) if path.exists() else {}
    runs = collect(folder, study_configs(data), {}) if settings else []
    return (aggregate(runs) if runs else {}), runs, settings


def head_aer(runs: list[dict], name: str, layer: int, head: int) -> list[float]:
    """AER of one (layer, head) over a configuration's seeds (layer < 0 counts from the top)."""
    values = []
    for run in runs:
        grid = (run["eval"] or {}).get("aer_heads") if run["name"] == name else None
        if grid:
            values.append(grid[layer if layer >= 0 else len(grid) + layer][head])
    return values


def mean_sd(values: list[float]) -> str:
    if not values:
        return "not run"
    return f"{statistics.fmean(values):.3f}" + (f" ± {statistics.stdev(values):.3f}" if len(values) > 1 else "") \
        + f" ({len(values)} seed{'s' if len(values) != 1 else ''})"


def guided_head_note(runs: list[dict]) -> list[str]:
    """The supervised Transformer head (penultimate layer, head 1) against the
    same head unguided: a description, the test is in Garg et al.'s section."""
    name = "transformer-sinusoidal-guided"
    config = next(c for c in study_configs("toy") if c.name == name)
    values = dict(o.split("=", 1) for o in config.overrides if o.startswith("trainer.guided_alignment."))
    layer = int(values.get("trainer.guided_alignment.layer", -2))
    head = int(values.get("trainer.guided_alignment.head", 0))
    sup, unsup = head_aer(runs, name, layer, head), head_aer(runs, "transformer-sinusoidal", layer, head)
    if not sup:
        return []
    return [f"- The supervised head itself (layer {layer} from the top, head {head + 1}): AER {mean_sd(sup)}; "
            f"the same head of the unguided model {mean_sd(unsup)} (described; heads of two models need not "
            "play the same part).", ""]


def caveat_lines(table: dict, toy: bool) -> list[str]:
    done = [n for n, e in table.items() if e["n"]]
    if toy:
        solved = [n for n in done if table[n]["stats"].get("test_bleu", (0,))[0] >= 95]
        return ["#### What may explain differences from the papers", "",
                f"- The toy task is tiny (8,000 pairs, 90 words): {len(solved)} of the {len(done)} configurations "
                "run reach a mean test BLEU of 95 or more, so BLEU can hardly rank them; the papers' claims are "
                "about BLEU on large data. The toy part ranks what it can: how well attention aligns (AER "
                "against the true links) and how many seeds reach BLEU 95 within 600 updates.", ""]
    bleu = sorted(table[n]["stats"]["test_bleu"][0] for n in done if "test_bleu" in table[n]["stats"])
    span = f"{bleu[0]:.1f} to {bleu[-1]:.1f}" if bleu else "?"
    return ["#### What may explain differences from the papers", "",
            "- Data and budget: 29,000 training pairs and 1,600 updates of RNNs of about 3 million parameters "
            f"(the 2-million-parameter Transformers: 1,000 updates; mean test BLEU {span} over the "
            f"{len(done)} configurations run); the papers trained on millions of pairs for days. A gap at this "
            "budget can be speed of learning: the convergence check in the Multi30k report says which hold.",
            "- AER here is against eflomal's links (silver, not gold; see the Multi30k report for the "
            "recipe's AER on the toy task's true links).",
            "- The seeds of every row were fixed before the runs; a gap is read as a finding only where it "
            "survives Holm's correction over its section.", ""]


def glance_toy(table: dict, note: str = "") -> list[str]:
    out = ["", "## Part 1 at a glance", "",
           "| configuration | family | seeds | BLEU 95 within 600 updates | test BLEU | AER | AER, head chosen "
           "on valid |", "|---|---|---|---|---|---|---|"]
    for name, entry in table.items():
        if entry["n"]:
            out.append(f"| {name} | {entry['family']} | {entry['n']} | {cell(entry, 'steps_to_target', '')} | "
                       f"{cell(entry, 'test_bleu', '{:.2f}')} | {cell(entry, 'aer', '{:.3f}')} | "
                       f"{cell(entry, 'aer_head_valid', '{:.3f}')} |")
    return out + ["", "AER: of the attention shown (Transformers: last layer, mean of heads). " + note
                  + " Details, galleries and curves: [toy/README.md](toy/README.md)."]


def glance_multi30k(table: dict, note: str = "") -> list[str]:
    configs, claimed = study_configs("multi30k"), declared(table, "multi30k")
    return ["", "## Part 2 at a glance", "",
            "Every trained configuration on Multi30k de→en, by mean test BLEU (greedy), RNN models and "
            "Transformers apart; a gap to the first is a finding only where it survives Holm's correction "
            "over its table at 5%. The decode-only beam rows and everything else: "
            "[multi30k/README.md](multi30k/README.md#overall-ranking).", "",
            "### RNN models", "", *ranking_table(configs, table, toy=False, transformers=False, declared=claimed), "",
            "### Transformers", "", *ranking_table(configs, table, toy=False, transformers=True, declared=claimed), "",
            seed_plan_line(configs, table, "multi30k"), *(["", note] if note else [])]


def papers_lines(parts: dict) -> list[str]:
    out = ["", "## What the papers found, and what we find", "",
           "Each claim names the paper's table or section, the measure, the rows compared and what the paper "
           "expects. Each comparison gives the rows' mean ± sd over seeds, the gap with its 95% confidence "
           "interval and Welch's exact p (scipy), and two decisions after Holm's correction at 5% (statsmodels): "
           f"**per claim** ({FAMILIES_CHANGED}) and **per paper** ({FIRST_GROUPING}). Neither grouping was "
           "declared before every result; where they disagree, the finding depends on a choice made after the "
           "results and is not a finding of this grid. **agrees** or **disagrees** where the gap survives, "
           "**no finding** where it does not, and rows whose seeds all gave one value are described, never "
           "tested. No decision rests on the paired bootstrap of first seeds (it measures test-set noise: see "
           "the Multi30k report). The score claims are read with an unscaled luong_general whose attention "
           "is nearly one-hot (entropy 0.08 nats against 1.31 for bahdanau): the pre-registered confirmation "
           "tests whether scaling the score closes the gap.", *grouping_lines(parts), *edited_lines()]
    for data, heading in (("toy", "On the toy task (true alignment known)"),
                          ("multi30k", "On Multi30k de→en (AER against eflomal's silver links)")):
        table, runs, _ = parts[data]
        out += ["", f"### {heading}", "", *findings(table, data)]
        if table:
            out += guided_head_note(runs) + caveat_lines(table, data == "toy")
    return out


def grouping_lines(parts: dict) -> list[str]:
    """Which decisions the change of families flipped, per part."""
    out = ["", "### Decisions that depend on the grouping", ""]
    for data in ("toy", "multi30k"):
        table = parts[data][0]
        changed = grouping_changes(table, data) if table else []
        out.append(f"- {'Toy task' if data == 'toy' else 'Multi30k'}: {len(changed)} decision"
                   f"{'s' * (len(changed) != 1)} differ" + ("" if not changed else ": " + "; ".join(
                       f"{c.a} vs {c.b} ({MEASURES.get(claim.measure, claim.measure)}, p = "
                       f"{c.comparison.p:.3g}): per claim {now}, per paper {then}"
                       for claim, c, now, then in changed)))
    return out


def edited_lines() -> list[str]:
    """Every claim edited after its result was known."""
    edited = [c for c in CLAIMS if c.edited]
    return ["", "### Claims edited after their results", "",
            *[f"- {PAPERS[c.paper].cite if c.paper in PAPERS else c.paper}, {c.where}: {c.says[:120]}"
              f"{'…' if len(c.says) > 120 else ''} — {c.edited}" for c in edited]]


def convergence_item(root: Path) -> str:
    """The index's pointer to the convergence check and to where it is read."""
    finished = [p for p in (root / CONVERGENCE_FOLDER / "records").glob("*/seed*.json") if record_done(p)]
    planned = len(CONVERGENCE.rows) * CONVERGENCE.seeds
    if not finished:
        return f"- Convergence check (Multi30k, {planned} runs planned): not run yet"
    return (f"- [Convergence check](convergence/README.md): {len(finished)} of {planned} planned runs finished "
            f"({', '.join(CONVERGENCE.rows)}, {CONVERGENCE.factor}× the grid's budget with early stopping); read "
            "against the grid in [Part 2's *Convergence check*](multi30k/README.md#convergence-check)")


def confirmation_item(root: Path) -> str:
    """The index's pointer to the confirmation runs and what they confirm so far."""
    folder = root / CONFIRMATION_FOLDER
    planned = len(CONFIRMATION.rows) * CONFIRMATION.seeds
    configs = [c for c in study_configs("multi30k") if c.name in CONFIRMATION.rows]
    runs = collect(folder, configs, {c.name: list(range(1, CONFIRMATION.seeds + 1)) for c in configs})
    if not any(r["eval"] for r in runs):
        return f"- Confirmation runs (Multi30k, {planned} runs planned, scored on test_2017_flickr): not run yet"
    return (f"- [Confirmation runs](confirmation/README.md) (test_2016 beside test_2017_flickr, a set nothing "
            f"was chosen on; trained to early stopping): {confirmed_summary(runs)} Every other finding below "
            "is read at the grid's budget on test_2016_flickr only.")


def preregistered_item(root: Path) -> list[str]:
    """The index's first reading: the pre-registered confirmation, where its plan is."""
    from nmt_study.preregistration import PREREGISTERED_FOLDER, load_plan
    from nmt_study.preregistered_report import summary

    folder = root / PREREGISTERED_FOLDER
    if not (folder / "plan.json").is_file():
        return []
    plan = load_plan(folder)
    return [f"**The pre-registered confirmation** ([plan and page](preregistered/README.md); plan committed "
            f"before its runs, {len(plan.seeds)} fresh seeds a row, decided on {plan.primary} only): "
            f"{summary(folder, plan)}. Until its runs are finished, no score finding below is confirmed: "
            "each is a reading of the grid or of the first confirmation, with the limits their pages state.", ""]


def write_index(root: Path) -> None:
    root = Path(root)
    out = ["# The attention study", "",
           "Which attention mechanism translates best, and which aligns best? `python -m nmt_study` trains "
           "every mechanism nmt offers (8 scores, 4 scopes, the LSTMN encoder, 6 bridges, 6 positional "
           "encodings, one family at a time on a fixed base), several seeds each, and writes these pages "
           "from the run records. This page is rewritten by the command.", "",
           *preregistered_item(root)]
    parts = {data: part_table(root / data, data) for data in PARTS}
    for data, title in PARTS.items():
        table, _, settings = parts[data]
        if settings:
            command = portable_command(settings["sessions"][-1]["command"], root / data) \
                if settings.get("sessions") else "?"
            out.append(f"- [{title}]({data}/README.md): {sum(e['n'] for e in table.values())} finished runs over "
                       f"{len(table)} configurations; last command `{command}`")
        else:
            out.append(f"- {title}: not run yet")
    out.append(convergence_item(root))
    out.append(confirmation_item(root))
    out.append(lr_sweep_item(root))
    quality = eflomal_quality(root)      # its baselines are scored on the parts' own test links
    if parts["toy"][0]:
        out += glance_toy(parts["toy"][0], baseline_note(quality.get("toy", {}).get("baselines_vs_truth", {}),
                                                         parts["toy"][0]))
    if parts["multi30k"][0]:
        out += glance_multi30k(parts["multi30k"][0],
                               baseline_note(quality.get("multi30k", {}).get("baselines_vs_committed", {}),
                                             parts["multi30k"][0]))
    out += papers_lines(parts)
    out += ["", "## Superseded", "",
            "The first Multi30k study gave every run 1.5 minutes (80–135 updates, test BLEU 2–7): it "
            "ranked start-up speed, not attention mechanisms, and its \"peak on reference\" column measured "
            "monotonicity, not alignment. Its records and report are kept in git history, not in the working "
            f"tree: `git show {SUPERSEDED_AT}:benchmarks/attention_study/{SUPERSEDED}/README.md` (the second "
            f"round's, under `round2_2026-11-25/` at the same commit). Neither is part of any table above.", ""]
    (root / "README.md").write_text("\n".join(out), encoding="utf-8")


def rewrite_preregistered(out: Path, plan, settings: dict) -> None:
    """The pre-registered confirmation's page and this index, rewritten from the records."""
    from nmt_study.preregistered_report import write_preregistered_report

    write_preregistered_report(out, plan, settings)
    write_index(Path(out).parent)
