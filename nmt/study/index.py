"""benchmarks/attention_study/README.md: the index over the study's parts,
with "What the papers found, and what we find", written from the records.

Every sentence about a finding is built from the rows it cites: means and
standard deviations over seeds, and a ranking word only where Welch's
t-test over the seeds finds the gap (nmt.study.statistics).
"""

import json
from pathlib import Path

from nmt.study.configs import study_configs
from nmt.study.ranking import ranking_table, top_three_line
from nmt.study.statistics import welch
from nmt.study.tables import aggregate, cell, collect

PARTS = {"toy": "Part 1: the toy task (true alignment known)", "multi30k": "Part 2: Multi30k de→en"}
SUPERSEDED = "superseded_2026-11-23_1.5min"


def part_table(folder: Path, data: str) -> dict:
    configs = study_configs(data)
    runs = collect(folder, configs, {})
    return aggregate(runs) if runs else {}


def fmt(table: dict, name: str, key: str, digits: int = 3) -> str:
    entry = table.get(name)
    if not entry or key not in entry["stats"]:
        return f"{name}: not run"
    mean, sd = entry["stats"][key]
    text = f"{mean:.{digits}f}" + (f" ± {sd:.{digits}f}" if sd is not None else "")
    return f"{name} {text} ({entry['n']} seed{'s' if entry['n'] != 1 else ''})"


class PairedEvidence:
    """Paired bootstrap results of first seeds' test outputs, by (a, b) pair.

    Multi30k's claims on test BLEU are checked with sacreBLEU's paired
    bootstrap as well as the seed spread. The index cannot score outputs (it
    has the records, not the references), so the report runs the tests the
    index asks for: `wanted` collects every pair looked up, the report fills
    `results` (nmt.study.significance) and saves them in OUT/paired.json."""

    def __init__(self, results: dict | None = None):
        self.results, self.wanted = dict(results or {}), set()

    def get(self, a: str, b: str) -> dict | None:
        self.wanted.add((a, b))
        return self.results.get(f"{a}|{b}")


def _compare(table: dict, a: str, b: str, key: str, lower_is_better: bool,
            paired: PairedEvidence | None = None) -> tuple[str, str | None]:
    """'a … vs b …: verdict', and which is better when clear (None if not).
    Clear: Welch's exact p below 5% over the seeds (this line alone, not yet
    corrected over its section). With `paired`, the paired bootstrap of the
    first seeds is shown as what it is, test-set sampling of one seed pair:
    it never decides."""

    if a not in table or b not in table or key not in table[a]["stats"] or key not in table[b]["stats"]:
        return f"{a} vs {b}: not both run", None
    comparison = welch(table[a]["values"].get(key, []), table[b]["values"].get(key, []))
    clear = comparison.testable and comparison.p < 0.05
    ma, mb = table[a]["stats"][key][0], table[b]["stats"][key][0]
    better = a if (ma < mb) == lower_is_better else b
    digits = 0 if key == "steps_to_target" else (3 if key == "aer" else 2)
    quality = "clearly sharper (lower)" if key == "entropy" else "clearly better"   # entropy: no better or worse
    if comparison.kind == "no spread":
        verdict = "equal, no spread" if comparison.gap == 0 else "unequal, no spread (not a test)"
    elif comparison.kind == "too few seeds":
        verdict = "too few seeds to tell"
    else:
        verdict = f"{f'{better} {quality}' if clear else 'no finding'} (Welch p = {comparison.p:.3g})"
    test = paired.get(a, b) if paired is not None and key == "test_bleu" else None
    extra = ""
    if test:
        extra = (f"; paired bootstrap of the first seeds (test-set noise only): {test['difference']:+.2f} BLEU, "
                 f"p = {test['p_value']:.3f}")
    return (f"{fmt(table, a, key, digits)} vs {fmt(table, b, key, digits)}{extra}: {verdict}",
            better if clear else None)


compare = _compare


def best_of(table: dict, names: list[str], key: str, lower_is_better: bool) -> str | None:
    done = [n for n in names if n in table and key in table[n]["stats"]]
    if not done:
        return None
    return min(done, key=lambda n: table[n]["stats"][key][0] * (1 if lower_is_better else -1))


def findings(table: dict, runs: list[dict] | None = None, data: str = "toy",
             paired: PairedEvidence | None = None) -> list[str]:
    """The papers' claims, each checked against one part's rows."""
    import functools

    if not table:
        return [f"The {'toy' if data == 'toy' else 'Multi30k'} part has no finished runs yet."]
    compare = functools.partial(_compare, paired=paired)
    toy = data == "toy"
    # what a claim about learning is read from: speed to the BLEU target on the toy task
    # (where every mechanism reaches it), test BLEU on Multi30k (which has no target)
    learned, learned_lower, learned_what = (("steps_to_target", True, "updates to BLEU 95") if toy
                                            else ("test_bleu", False, "test BLEU"))
    out = []
    scores = ["bahdanau", "luong_dot", "luong_general", "luong_concat", "luong_location", "scaled_dot",
              "cosine", "multihead"]
    scopes = ["luong_general", "luong_general-local_m", "luong_general-local_p", "luong_general-hard",
              "bahdanau", "bahdanau-local_m", "bahdanau-local_p", "bahdanau-hard"]
    # Luong 2015
    best_scope = best_of(table, scopes, "aer", True)
    line, clear = compare(table, "luong_general-local_p", best_scope, "aer", True) \
        if best_scope and best_scope != "luong_general-local_p" else ("", None)
    out += ["### Luong, Pham and Manning 2015 (local-p with the general score best; location worst; dot "
            "strong for global attention)", ""]
    if best_scope == "luong_general-local_p":
        out.append("- Local-p with general: it has the lowest mean AER of the scope family "
                   f"({fmt(table, best_scope, 'aer')}, family table *Attention scope*). Agrees on "
                   "alignment; whether the lead is larger than the seed spread is in that table's last column.")
    elif best_scope:
        out.append(f"- Local-p with general: the scope family's lowest mean AER is {best_scope}'s, not "
                   f"local-p + general's: {line} (family table *Attention scope*). "
                   + ("Disagrees on alignment." if clear else "Not settled: no ranking without a clear gap."))
    line2, _ = compare(table, "luong_general-local_p", "luong_general", learned, learned_lower)
    out.append(f"- {learned_what[0].upper() + learned_what[1:]}, local-p + general against global general: {line2}.")
    worst = best_of(table, scores, "aer", False)   # highest AER
    others = [n for n in scores if n != worst and n in table]
    runner = best_of(table, others, "aer", False)
    if worst == "luong_location" and runner:
        line3, clear3 = compare(table, worst, runner, "aer", True)
        verdict = ("Agrees on alignment: location aligns worst." if clear3 else
                   "Not settled: location has the highest mean AER, but not by a clear gap.")
        out.append(f"- Location worst: against the next worst, {line3}. {verdict}")
    elif worst and "luong_location" in table:
        line3, clear3 = compare(table, "luong_location", worst, "aer", True)
        verdict = ("Disagrees on alignment: location aligns clearly better than the worst score." if clear3
                   else "Not settled: location is not the worst by the means, but not by a clear gap.")
        out.append(f"- Location worst: the score family's highest mean AER is {worst}'s; location against "
                   f"it: {line3}. {verdict}")
        line4, _ = compare(table, "luong_location", "luong_general", learned, learned_lower)
        out.append(f"- Location's {learned_what} against general's: {line4}.")
    if not toy and "luong_location" in table:
        # Luong et al.'s claim is about BLEU: location against the lowest other score
        lowest = best_of(table, [n for n in scores if n != "luong_location"], "test_bleu", True)
        if lowest:
            line6, _ = compare(table, "luong_location", lowest, "test_bleu", False)
            out.append(f"- Location worst in BLEU: against the lowest other score, {lowest}: {line6}.")
    line4, _ = compare(table, "luong_dot", "luong_general", "aer", True)
    line5, _ = compare(table, "luong_dot", "luong_general", learned, learned_lower)
    out.append(f"- Dot for global attention: AER {line4}; {learned_what} {line5}.")
    # Bahdanau vs Luong
    out += ["", "### Bahdanau (additive) against Luong (multiplicative) scores", ""]
    for key, what in measures(toy, "aer", "steps_to_target", "test_bleu"):
        line, _ = compare(table, "bahdanau", "luong_general", key, key != "test_bleu")
        out.append(f"- {what}: {line}.")
    out.append("- Both run under the same Luong-style decoder (input feeding, attention after the RNN "
               "step), so only the score differs; Bahdanau et al.'s own decoder attends before its step.")
    # Shaw 2018
    out += ["", "### Shaw, Uszkoreit and Vaswani 2018 (relative positions +0.3 to +1.3 BLEU over absolute, WMT)", ""]
    for absolute in ("transformer-sinusoidal", "transformer-learned"):
        for key, what in measures(toy, "test_bleu", "steps_to_target", "aer"):
            line, _ = compare(table, "transformer-relative", absolute, key, key != "test_bleu")
            out.append(f"- {what}: {line}.")
    out.append("- A BLEU gain of +0.3 to +1.3 cannot show where both encodings reach a test BLEU near 100 "
               "(their rows): there the toy part can only say which learns faster or aligns better." if toy else
               "- Shaw et al. trained 6-layer Transformers on WMT's millions of pairs for 100,000+ updates; here 2 "
               "layers, 29,000 pairs and 1,600 updates, so a gap of their size (+0.3 to +1.3) is within what "
               "two seeds can separate only if the spread is small (the rows' ± say how small).")
    # Cheng 2016
    out += ["", "### Cheng, Dong and Lapata 2016 (LSTMN: an encoder with intra-attention over its memory tape)", ""]
    for key, what in measures(toy, "aer", "steps_to_target", "test_bleu"):
        line, _ = compare(table, "lstmn", "luong_general", key, key != "test_bleu")
        out.append(f"- {what}: {line} (lstmn: one direction; luong_general: the bi-GRU base).")
    out += newer_mechanisms(table, runs or [], toy, compare)
    if not toy:
        return out + multi30k_caveats(table)
    solved = [n for n, e in table.items() if e["n"] and e["stats"].get("test_bleu", (0,))[0] >= 95]
    done = [n for n, e in table.items() if e["n"]]
    out += ["", "### What may explain differences from the papers", "",
            f"- The toy task is tiny (8,000 pairs, 90 words): {len(solved)} of the {len(done)} configurations "
            "run reach a mean test BLEU of 95 or more, so BLEU can hardly rank them here; the papers' claims "
            "are about BLEU on WMT (millions of pairs). The toy part ranks what it can: how fast a mechanism "
            "learns (updates to BLEU 95) and how well its attention aligns (AER against the true links).",
            "- The budget is a number of updates, with early stopping once validation BLEU stops improving; "
            "a mechanism that is slower per update is not penalised for it in updates to BLEU 95, only in "
            "the CPU-min and train tok/s columns (measured on a shared machine).",
            "- Part 2 (Multi30k) checks the same claims at a budget where the models translate (below)."]
    return out


MEASURES = {"aer": "AER", "steps_to_target": "updates to BLEU 95", "test_bleu": "test BLEU", "entropy": "entropy"}


def measures(toy: bool, *keys: str) -> list[tuple[str, str]]:
    """(key, name) of the measures a part has: Multi30k has no BLEU target, so no updates to it."""
    return [(k, MEASURES[k]) for k in keys if toy or k != "steps_to_target"]


def multi30k_caveats(table: dict) -> list[str]:
    done = [n for n, e in table.items() if e["n"]]
    bleu = sorted(e["stats"]["test_bleu"][0] for e in table.values() if e["n"] and "test_bleu" in e["stats"])
    span = f"{bleu[0]:.1f} to {bleu[-1]:.1f}" if bleu else "?"
    return ["", "### What may explain differences from the papers", "",
            "- Data and budget: 29,000 training pairs and 1,600 updates of RNNs of about 3 million parameters "
            "(the 2-million-parameter Transformers: 1,000 updates) "
            f"(mean test BLEU {span} over the {len(done)} configurations run); the papers trained on WMT's "
            "millions of pairs for days. Differences that need long training or large data cannot show here.",
            "- AER here is against eflomal's links (a statistical aligner, grow-diag-final-and): silver, not "
            "gold. A mechanism can align 'better' than eflomal in places and still be counted wrong.",
            "- Two seeds per configuration (three for the three ranked first) give a wide t interval; a gap is "
            "called only where Welch's test over the seeds or the paired bootstrap of the first seeds "
            "(p < 0.05) supports it."]


def head_aer(runs: list[dict], name: str, layer: int, head: int) -> list[float]:
    """AER of one (layer, head) over a configuration's seeds (layer < 0 counts from the top)."""
    values = []
    for run in runs:
        grid = (run["eval"] or {}).get("aer_heads") if run["name"] == name else None
        if grid:
            values.append(grid[layer if layer >= 0 else len(grid) + layer][head])
    return values


def best_heads(runs: list[dict], name: str) -> list[float]:
    return [r["eval"]["aer_best_head"] for r in runs
            if r["name"] == name and r["eval"] and r["eval"].get("aer_best_head") is not None]


def mean_sd(values: list[float]) -> str:
    import statistics

    if not values:
        return "not run"
    return f"{statistics.fmean(values):.3f}" + (f" ± {statistics.stdev(values):.3f}" if len(values) > 1 else "") \
        + f" ({len(values)} seed{'s' if len(values) != 1 else ''})"


def guided_head(name: str) -> tuple[int, int]:
    """The (layer, head) a guided configuration supervises, from its overrides."""
    config = next(c for c in study_configs("toy") if c.name == name)
    values = dict(o.split("=", 1) for o in config.overrides if o.startswith("trainer.guided_alignment."))
    return int(values.get("trainer.guided_alignment.layer", -2)), int(values.get("trainer.guided_alignment.head", 0))


def newer_mechanisms(table: dict, runs: list[dict], toy: bool = True, compare=_compare) -> list[str]:
    """Guided alignment, sparse normalisers, coverage and ALiBi against their baselines."""
    import statistics

    links = "the true links" if toy else "eflomal's silver links"
    out = ["", "### Garg et al. 2019 (guided alignment: supervising one attention with word links)", ""]
    base, guided = table.get("luong_general"), table.get("luong_general-guided")
    if base and guided and "aer" in base["stats"] and "aer" in guided["stats"]:
        line, clear = compare(table, "luong_general-guided", "luong_general", "aer", True)
        drop = base["stats"]["aer"][0] - guided["stats"]["aer"][0]
        out.append(f"- RNN: supervising the attention with {links} changes the AER by {-drop:+.3f} "
                   f"(from {base['stats']['aer'][0]:.3f} to {guided['stats']['aer'][0]:.3f}): {line}.")
        line, _ = compare(table, "luong_general-guided", "luong_general", "test_bleu", False)
        out.append(f"- RNN, test BLEU: {line}.")
    else:
        out.append("- RNN: luong_general-guided or luong_general not run yet.")
    name = "transformer-sinusoidal-guided"
    if name in table and table[name]["n"]:
        layer, head = guided_head(name)
        sup, unsup = head_aer(runs, name, layer, head), head_aer(runs, "transformer-sinusoidal", layer, head)
        where = (f"the penultimate layer's head {head + 1}" if layer == -2 else
                 f"layer {layer + 1 if layer >= 0 else layer} (negative: from the top), head {head + 1}")
        text = (f"- Transformer: the supervised head ({where}) has AER {mean_sd(sup)}; the same head without "
                f"guidance {mean_sd(unsup)}; the best head of the unguided model "
                f"{mean_sd(best_heads(runs, 'transformer-sinusoidal'))}")
        if sup and unsup:
            text += f": a change of {statistics.fmean(sup) - statistics.fmean(unsup):+.3f} on that head"
        out.append(text + ". The attention shown elsewhere (last layer, mean of heads) is not the supervised one: "
                   f"{compare(table, name, 'transformer-sinusoidal', 'aer', True)[0]}.")
    out += ["", "### Sparse normalisers (sparsemax, Martins and Astudillo 2016; 1.5-entmax, Peters et al. 2019)", "",
            "The papers: sparse attention translates about as well as softmax and is easier to read."]
    for prefix, softmax in (("luong_general", "luong_general"), ("bahdanau", "bahdanau"),
                            ("transformer", "transformer-sinusoidal")):
        for normaliser in ("sparsemax", "entmax15"):
            for key, what in (("aer", "AER"), ("test_bleu", "test BLEU"), ("entropy", "entropy")):
                line, _ = compare(table, f"{prefix}-{normaliser}", softmax, key, key != "test_bleu")
                out.append(f"- {what}: {line}.")
    out.append("- The Transformers' AER and entropy are of the attention shown, the mean of the last layer's "
               "heads: a mean of sparse heads is not sparse, so its entropy can exceed softmax's; each head's "
               "AER is in the part's head table.")
    out += ["", "### Coverage attention (Tu et al. 2016, who report better alignment (AER) with coverage)", ""]
    for key, what in measures(toy, "aer", "test_bleu", "steps_to_target"):
        line, _ = compare(table, "coverage", "bahdanau", key, key != "test_bleu")
        out.append(f"- {what}: {line} (coverage extends bahdanau's additive score).")
    out += coverage_penalty_findings(table, compare)
    out += ["", "### ALiBi (Press et al. 2022: no position embeddings; a linear distance penalty)", "",
            "The paper's claim is about inputs longer than in training"
            + (", which the toy test set does not have" if toy else "") + "; at the test set's lengths it is "
            "compared here with sinusoidal (the extrapolation itself: tests/models/test_alibi.py)."]
    for key, what in measures(toy, "test_bleu", "steps_to_target", "aer"):
        line, _ = compare(table, "transformer-alibi", "transformer-sinusoidal", key, key != "test_bleu")
        out.append(f"- {what}: {line}.")
    return out


def coverage_penalty_findings(table: dict, compare=_compare) -> list[str]:
    """The decode-only rows: beam search with and without Wu et al.'s coverage penalty."""
    rows = [c for c in study_configs("toy") if c.decode_of]
    plain = next(c for c in rows if not c.coverage_penalty)
    penalised = next(c for c in rows if c.coverage_penalty)
    out = ["", f"### Coverage penalty in beam search (Wu et al. 2016, Sec. 7; β = {penalised.coverage_penalty:g}, "
           f"beam {penalised.beam_size}, decode only)", "",
           "Wu et al. tune the coverage penalty with the length penalty and report a BLEU gain from both; "
           "the penalty favours hypotheses whose attention covers every source word."]
    line, _ = compare(table, penalised.name, plain.name, "test_bleu", False)
    out.append(f"- test BLEU, the same checkpoints of {plain.decode_of} decoded with and without it: {line}.")
    line, _ = compare(table, penalised.name, plain.name, "test_chrf", False)
    out.append(f"- chrF, the same pairs (the penalty favours outputs that cover more of the source, so "
               f"chrF's recall can move apart from BLEU's precision): {line}.")
    line, _ = compare(table, plain.name, plain.decode_of, "test_bleu", False)
    out.append(f"- test BLEU, beam {plain.beam_size} against greedy ({plain.decode_of}'s own row): {line}.")
    out.append("- AER: unchanged by construction; the penalty re-ranks finished hypotheses, and the attention "
               "read on the reference is the trained model's.")
    return out


def load_paired(folder: Path) -> dict:
    path = Path(folder) / "paired.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def cited_pairs(table: dict, runs: list[dict]) -> set[tuple[str, str]]:
    """The (a, b) pairs whose test BLEU the Multi30k findings compare."""
    evidence = PairedEvidence()
    findings(table, runs, "multi30k", evidence)
    return {(a, b) for a, b in evidence.wanted if a in table and b in table}


def write_index(root: Path) -> None:
    root = Path(root)
    out = ["# The attention study", "",
           "Which attention mechanism translates best, and which aligns best? `python -m nmt.study` trains "
           "every mechanism nmt offers (8 scores, 4 scopes, the LSTMN encoder, 6 bridges, 5 positional "
           "encodings, one family at a time on a fixed base), several seeds each, and writes these pages "
           "from the run records. This page is rewritten by the command.", ""]
    toy, toy_runs, parts = {}, [], {}
    for data, title in PARTS.items():
        folder = root / data
        settings = json.loads((folder / "study.json").read_text()) if (folder / "study.json").exists() else {}
        runs = collect(folder, study_configs(data), {}) if settings else []
        table = aggregate(runs) if runs else {}
        parts[data] = (table, runs)
        if data == "toy":
            toy, toy_runs = table, runs
        done = sum(e["n"] for e in table.values())
        if settings:
            command = settings["sessions"][-1]["command"] if settings.get("sessions") else "?"
            out += [f"- [{title}]({data}/README.md): {done} finished runs over {len(table)} configurations; "
                    f"last command `{command}`"]
        else:
            out += [f"- {title}: not run yet"]
    if toy:
        out += ["", "## Part 1 at a glance", "",
                "| configuration | family | seeds | updates to BLEU 95 | test BLEU | AER | AER best head |",
                "|---|---|---|---|---|---|---|"]
        for name, entry in toy.items():
            if entry["n"]:
                out.append(f"| {name} | {entry['family']} | {entry['n']} | "
                           f"{cell(entry, 'steps_to_target', '{:,.0f}')} | {cell(entry, 'test_bleu', '{:.2f}')} | "
                           f"{cell(entry, 'aer', '{:.3f}')} | {cell(entry, 'aer_best_head', '{:.3f}')} |")
    if toy:
        out += ["", "AER: of the attention shown (Transformers: last layer, mean of heads); *AER best head*: "
                "each seed's best single head (Transformers only). Details, galleries and curves: "
                "[toy/README.md](toy/README.md)."]
    m30k, m30k_runs = parts.get("multi30k", ({}, []))
    if m30k:

        configs = study_configs("multi30k")
        out += ["", "## Part 2 at a glance", "",
                "Every trained configuration on Multi30k de→en, by mean test BLEU (greedy), RNN models and "
                "Transformers apart; a gap to the first is a finding only where it survives Holm's correction "
                "over its table at 5%. The decode-only beam rows and everything else: "
                "[multi30k/README.md](multi30k/README.md#overall-ranking).", "",
                "### RNN models", "", *ranking_table(configs, m30k, toy=False, transformers=False), "",
                "### Transformers", "", *ranking_table(configs, m30k, toy=False, transformers=True), "",
                top_three_line(configs, m30k, toy=False)]
    paired = PairedEvidence(load_paired(root / "multi30k"))
    out += ["", "## What the papers found, and what we find", "",
            "Each line cites its rows (mean ± sd over seeds) and reads a gap as a finding only where Welch's "
            "exact p over the seeds is below 5% (per line; the correction over each section's comparisons "
            "comes with the claims as data). The paired bootstrap of first seeds is shown as test-set "
            "noise and decides nothing.", "",
            "### On the toy task (true alignment known)", "",
            *[line.replace("### ", "#### ", 1) for line in findings(toy, toy_runs)],
            "", "### On Multi30k de→en (a real budget; AER against eflomal's silver links)", "",
            *[line.replace("### ", "#### ", 1) for line in findings(m30k, m30k_runs, "multi30k", paired)]]
    out += ["", "## Superseded", "",
            f"The first Multi30k study gave every run 1.5 minutes (80–135 updates, test BLEU 2–7): it "
            "ranked start-up speed, not attention mechanisms, and its \"peak on reference\" column measured "
            f"monotonicity, not alignment. It is kept for the record in [{SUPERSEDED}/]({SUPERSEDED}/README.md) "
            "and is not part of any table above.", ""]
    (root / "README.md").write_text("\n".join(out), encoding="utf-8")
