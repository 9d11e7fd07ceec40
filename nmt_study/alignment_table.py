"""The report's section "Attention read as an alignment": every trained row's
AER with its precision and recall, the AER over linked target words only,
the one-step-later reading (Shift-Att) and, for Transformers, the head
chosen on the validation set and scored on test; under them the three
baselines that read no model (nmt_study.baselines) and, where known, the
eflomal recipe's own AER on the toy task (eflomal_quality.json).

Och & Ney 2003 (AER, precision |A∩P|/|A|, recall |A∩S|/|S|); Chen, Liu,
Chen, Jiang & Liu 2020 (Shift-Att: read target word t at the step where it
is the decoder's input).
"""

import json
import math
import statistics
from pathlib import Path

from nmt_study.alignment import AerCounts
from nmt_study.configs import StudyConfig, label
from nmt_study.tables import cell

COLUMNS = [("aer", "AER"), ("precision", "precision"), ("recall", "recall"),
           ("aer_linked", "AER, linked target words only"), ("aer_shift", "AER one step later (Shift-Att)"),
           ("aer_head_valid", "AER, head chosen on valid (Transformers)"),
           ("aer_head_valid_shift", "same, one step later")]
BASELINE_NAMES = {"diagonal": "diagonal: word j to round(j(I−1)/(J−1)) (no model)",
                  "same_position": "same position: word j to min(j, I−1) (no model)",
                  "one_link_floor": "one link per target word, the best possible (floor)"}


def baseline_row(name: str, counts: AerCounts) -> str:
    figures = [counts.aer, counts.precision, counts.recall, counts.aer_linked]
    return (f"| {name} | – | " + " | ".join(f"{v:.3f}" for v in figures) + " | – | – | – |")


def baseline_note(baselines: dict, table: dict | None = None) -> str:
    """One line under a table with an AER column: the baselines' AER on the same
    links and, with `table`, the rows read against them in words (baselines_read).
    `baselines`: name -> AerCounts, or name -> {"aer": ...} as eflomal_quality.json
    keeps them."""
    if not baselines:
        return ""
    aer = {k: (v.aer if isinstance(v, AerCounts) else v["aer"]) for k, v in baselines.items()}
    return (f"AER of alignments that read no model, on the same test links: diagonal {aer['diagonal']:.3f}, "
            f"same position {aer['same_position']:.3f}; one link per target word cannot go below "
            f"{aer['one_link_floor']:.3f}." + (" " + baselines_read(table, aer) if table else ""))


def gap_interval(seeds: list[float], baseline: float) -> tuple[float, float] | None:
    """The 95% t-interval of (mean AER over seeds - baseline): the gap's own noise,
    which is its seeds' (a baseline reads no model, so it has no seed noise of its
    own); None with fewer than two seeds."""
    from scipy import stats

    if len(seeds) < 2:
        return None
    mean, sd = statistics.fmean(seeds), statistics.stdev(seeds)
    half = stats.t.ppf(0.975, len(seeds) - 1) * sd / math.sqrt(len(seeds))
    return mean - baseline - half, mean - baseline + half


NAMED_AT_MOST = 8      # a longer list is given as its count: the tables above give each row's AER


def named(names: list[str]) -> str:
    return f" ({', '.join(names)})" if 0 < len(names) <= NAMED_AT_MOST else ""


def baselines_read(table: dict, aer: dict[str, float]) -> str:
    """Against each baseline, the configurations whose gap's 95% interval over their
    seeds lies wholly above it (worse), wholly below it (better) or spans it (not
    separable), in words: one band, applied both ways; uncorrected, so described,
    not tested."""
    seeds = {n: list(e.get("values", {}).get("aer", [])) for n, e in table.items() if e.get("n")}
    seeds = {n: v for n, v in seeds.items() if v}
    if not seeds:
        return ""
    parts = []
    for key, words in (("diagonal", "the diagonal"), ("same_position", "the same-position baseline")):
        found: dict[str, list[str]] = {"better": [], "worse": [], "not separable": [], "one seed": []}
        for name, values in sorted(seeds.items()):
            band = gap_interval(values, aer[key])
            found["one seed" if band is None else "worse" if band[0] > 0 else "better" if band[1] < 0
                  else "not separable"].append(name)
        said = [f"{len(found['better'])} better", f"{len(found['worse'])} worse{named(found['worse'])}",
                f"{len(found['not separable'])} not separable from it{named(found['not separable'])}"]
        if found["one seed"]:
            said.append(f"{len(found['one seed'])} with one seed, not read{named(found['one seed'])}")
        parts.append(f"against {words}, of the {len(seeds)} configurations " + ", ".join(said))
    return ("Read against them, each configuration's gap with its 95% t-interval over its seeds (the gap's own "
            "noise, applied both ways; uncorrected, so described, not tested): " + "; ".join(parts) + ".")


def eflomal_quality(root: Path) -> dict:
    """scripts/benchmarks/eflomal_quality.py's figures (eflomal_quality.json beside the parts), or {}."""
    path = Path(root) / "eflomal_quality.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def alignment_lines(configs: list[StudyConfig], table: dict, baselines: dict[str, AerCounts] | None,
                    quality: dict, toy: bool) -> list[str]:
    """Markdown lines of the section (empty without AER); `quality`: eflomal_quality()."""
    eflomal = quality.get("toy", {}).get("eflomal_vs_truth")
    runs = quality.get("multi30k", {}).get("run2_vs_run1")
    names = [c.name for c in configs if not c.decode_of and c.name in table and "aer" in table[c.name]["stats"]]
    if not names:
        return []
    reference = "the toy task's true links" if toy else "eflomal's silver links"
    unlinked = [table[n]["stats"]["unlinked_share"][0] for n in names if "unlinked_share" in table[n]["stats"]]
    out = ["", "## Attention read as an alignment", "",
           f"AER against {reference}, mean ± sd over seeds, with precision and recall (Och and Ney 2003). "
           "*Linked target words only* leaves out of A the target words the reference links to nothing"
           + (f" ({100 * unlinked[0]:.1f}% of the test target words)" if unlinked else "") + ": no single "
           "link of theirs can be right. *One step later* reads target word t from the attention of the "
           "step whose input it is (Shift-Att, Chen et al. 2020). For Transformers the head is chosen on "
           "the validation set's counts and scored on test, never chosen on test. The rows under the line "
           "read no model: what a reading must beat, and the floor of one link per target word.", "",
           "| configuration | seeds | " + " | ".join(title for _, title in COLUMNS) + " |",
           "|" + "---|" * (len(COLUMNS) + 2)]
    for name in names:
        entry = table[name]
        out.append(f"| {label(name)} | {entry['n']} | "
                   + " | ".join(cell(entry, key, "{:.3f}") for key, _ in COLUMNS) + " |")
    for key, counts in (baselines or {}).items():
        out.append(baseline_row(BASELINE_NAMES[key], counts))
    if eflomal:
        out.append(f"| eflomal recipe on the toy task, against its true links | – | {eflomal['aer']:.3f} | "
                   f"{eflomal['precision']:.3f} | {eflomal['recall']:.3f} | – | – | – | – |")
    if not baselines:
        out += ["", "Baselines: not computed (the report was written without the test pairs' reference links)."]
    if not toy and eflomal:
        out += ["", f"The references here are eflomal's links; the same recipe scores AER {eflomal['aer']:.3f} "
                "against the toy task's true links (last row), an estimate of how silver they are"
                + (f"; two runs of the recipe on Multi30k differ by AER {runs['aer']:.3f} (eflomal samples "
                   "without a seed), so a gap in AER below that is within the references' own noise"
                   if runs else "") + " (scripts/benchmarks/eflomal_quality.py)."]
    return out
