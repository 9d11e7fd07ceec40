"""The explorer page, and its offline form: one self-contained HTML file.

    python -m nmt.translate --checkpoint best.pt --attention-html attention.html < test.de

writes every sentence's translation, score and interactive heatmaps (every
layer and head) into one file with its script inline: no server, no
network. `python -m nmt.explore` serves the same page with a form instead.
"""

import json
from importlib import resources
from pathlib import Path

from nmt.base import own_files
from nmt.base.errors import NmtError
from nmt.explain import METHODS
from nmt.viz.alignment_view import alignment_readings, parse_links
from nmt.viz.attention_data import describe, explain
from nmt.viz.colour_scale import page_rule

PLACEHOLDER = "/*NMT_DATA*/null"
VIEWS_PLACEHOLDER = "/*NMT_VIEWS*/"
# the views' scripts, inlined into the page in this order
VIEWS = ("model_view.js", "head_view.js", "beam_tree.js", "alignment_view.js", "difference_view.js")


def render_page(data: dict) -> str:
    """The page with `data` inlined as a JavaScript object.

    data["mode"] is "server" (form; models, samples, beams) or "static"
    (models, sentences: [{line, source, results: [one per model]}]); the
    page also carries the colour rule (nmt.viz.colour_scale.page_rule)."""
    folder = resources.files("nmt.viz")
    page = folder.joinpath("explorer_page.html").read_text(encoding="utf-8")
    assert PLACEHOLDER in page and VIEWS_PLACEHOLDER in page, "explorer_page.html lost a placeholder"
    views = "\n".join(folder.joinpath(name).read_text(encoding="utf-8") for name in VIEWS)
    page = page.replace(VIEWS_PLACEHOLDER, views)
    # "<" escaped: the JSON cannot close the <script> element it sits in.
    data = {**data, "colour": page_rule(),             # the colour rule the script mirrors
            "explain_methods": {name: title for name, (title, _) in METHODS.items()}}   # the explorer's selector
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    return page.replace(PLACEHOLDER, payload)


def model_label(path) -> str:
    """A short name for a checkpoint: its last three path parts."""
    return "/".join(Path(path).parts[-3:])


def model_labels(paths) -> list[str]:
    """Short names that tell the checkpoints apart: the last three path parts
    (RUN/checkpoints/best.pt), more where two would read the same."""
    parts = [Path(p).resolve().parts for p in paths]
    for n in range(3, max(len(p) for p in parts) + 1):
        labels = ["/".join(p[-n:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return [str(p) for p in paths]              # the same file twice


def add_tree(translator, sentence: dict, beam_size: int | None, search: dict) -> None:
    """The beam tree of `sentence`'s search (nmt.viz.search_tree), or a note saying why there is none."""
    from nmt.viz.search_tree import beam_tree, records_its_beam

    result = sentence["results"][0]
    if not beam_size or beam_size < 2:
        return
    if len(translator.members) > 1 or not records_its_beam(translator):
        result["tree_note"] = ("no beam tree: an ensemble's search is not recorded" if len(translator.members) > 1
                               else "no beam tree: this model's beam search is its own library's")
        return
    try:
        _, result["tree"] = beam_tree(translator, sentence["source"], beam_size, **search)
    except NmtError as problem:              # a source the tree's check refuses (too long): said, not fatal
        result["tree_note"] = f"no beam tree: {problem}"


def write_attention_html(translator, sources, outputs, path, checkpoints=("model",),
                         beam_size: int | None = None, links: list[str] | None = None,
                         search: dict | None = None, add=None) -> None:
    """One file with every non-empty line's translation and attention maps.

    For an ensemble, each checkpoint re-reads the ensemble's output: one
    column of maps per model, side by side. `links`: one Pharaoh line per
    input line, reference word links drawn on the maps (alignment_view).
    A beam of one model's own search also gets each line's beam tree, its
    search run again with `search` (length_penalty, coverage_penalty,
    min_length: those of `outputs`). `add`: None, or a function (member,
    result, Translation) -> result that adds to each model's result
    (nmt.viz.explanation_maps.add_explanations: explanations, top-k)."""
    if isinstance(checkpoints, (str, Path)):
        checkpoints = [checkpoints]
    members = translator.members
    ensemble = f" (in an ensemble of {len(members)})" if len(members) > 1 else ""
    add = add or (lambda member, result, out: result)
    sentences = [
        {"line": number, "source": source,
         "results": [add(m, explain(m, source, out, beam_size), out) for m in members]}
        for number, (source, out) in enumerate(zip(sources, outputs), 1) if out.tgt_pieces
    ]
    for sentence in sentences:
        add_tree(translator, sentence, beam_size, search or {})
        line = links[sentence["line"] - 1] if links else ""
        where = f"--links line {sentence['line']}"
        for result in sentence["results"] if line.strip() else []:
            result["alignment"] = alignment_readings(result, parse_links(line, where), where)
    data = {"mode": "static", "title": "nmt attention",
            "models": [{"name": name + ensemble, "description": describe(m)}
                       for name, m in zip(model_labels(checkpoints), members)],
            "sentences": sentences}
    try:
        own_files.write(path, render_page(data).encode("utf-8"), own_files.PAGE)
    except OSError as error:
        raise NmtError(f"cannot write {path}: {error.strerror or error}") from None
