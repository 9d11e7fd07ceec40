"""The report's section "Attention read as an alignment": every trained row's
AER with its precision and recall, the AER over linked target words only,
the one-step-later reading (Shift-Att) and, for Transformers, the head
chosen on the validation set and scored on test; under them the three
baselines that read no model (nmt.study.baselines) and, where known, the
eflomal recipe's own AER on the toy task (eflomal_quality.json).

Och & Ney 2003 (AER, precision |A∩P|/|A|, recall |A∩S|/|S|); Chen, Liu,
Chen, Jiang & Liu 2020 (Shift-Att: read target word t at the step where it
is the decoder's input).
"""

import json
from pathlib import Path

from nmt.study.alignment import AerCounts
from nmt.study.configs import StudyConfig, label
from nmt.study.tables import cell

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


def baseline_note(baselines: dict, table: dict | None = None, noise: float | None = None) -> str:
    """One line under a table with an AER column: the baselines' AER on the same
    links and, with `table`, the rows read against them in words (baselines_read).
    `baselines`: name -> AerCounts, or name -> {"aer": ...} as eflomal_quality.json
    keeps them; `noise`: the references' own run-to-run AER difference, if known."""
    if not baselines:
        return ""
    aer = {k: (v.aer if isinstance(v, AerCounts) else v["aer"]) for k, v in baselines.items()}
    return (f"AER of alignments that read no model, on the same test links: diagonal {aer['diagonal']:.3f}, "
            f"same position {aer['same_position']:.3f}; one link per target word cannot go below "
            f"{aer['one_link_floor']:.3f}." + (" " + baselines_read(table, aer, noise) if table else ""))


def baselines_read(table: dict, aer: dict[str, float], noise: float | None) -> str:
    """How many configurations (mean AER over seeds) align worse than each baseline, and
    which are better than it by less than the references' own noise, in words."""
    means = {n: e["stats"]["aer"][0] for n, e in table.items() if e.get("n") and "aer" in e.get("stats", {})}
    if not means:
        return ""
    parts = []
    for key, words in (("diagonal", "the diagonal"), ("same_position", "the same-position baseline")):
        worse = sorted(n for n, v in means.items() if v > aer[key])
        near = sorted(n for n, v in means.items() if noise and aer[key] - noise <= v <= aer[key])
        parts.append(f"{len(worse)} of the {len(means)} configurations {'aligns' if len(worse) == 1 else 'align'} "
                     f"worse than {words}" + (f" ({', '.join(worse)})" if worse else "")
                     + (f", and {len(near)} more {'is' if len(near) == 1 else 'are'} better than it by less than "
                        f"the references' run-to-run noise (AER {noise:.3f}): {', '.join(near)}" if near else ""))
    return "Read against them: " + "; ".join(parts) + "."


def eflomal_quality(root: Path) -> dict:
    """scripts/eflomal_quality.py's figures (eflomal_quality.json beside the parts), or {}."""
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
                   if runs else "") + " (scripts/eflomal_quality.py)."]
    return out
