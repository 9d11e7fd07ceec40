"""Attention views inline in Jupyter: heatmap, model view, head view, beam tree.

    from nmt import Translator
    from nmt.viz import notebook

    t = Translator.from_checkpoint("outputs/.../checkpoints/best.pt", device="cpu")
    notebook.model_view(t, "Ein Hund läuft.")          # every layer x head, click one to open it
    notebook.head_view(t, "Ein Hund läuft.")           # lines, one colour per head
    notebook.heatmap(t, "Ein Hund läuft.", beam_size=5)
    notebook.heatmap(t, "Ein Hund läuft.", explain="integrated-gradients", top_k=5)   # nmt.explain
    notebook.beam_tree(t, "Ein Hund läuft.", beam_size=5)

Each returns an `InlineView`, which Jupyter shows through `_repr_html_`: the
explorer's page, with its data and script inline, in an iframe's srcdoc: no
server, no network, and its script and styles kept apart from the notebook's.
`.html` is the page itself, to save or test. The views are those of
nmt.explore (after BertViz, Vig 2019, and Seq2Seq-Vis, Strobelt et al. 2018).
"""

import html
import numbers
import uuid

from nmt.base import own_files
from nmt.base.cli_checks import check_output
from nmt.base.errors import NmtError
from nmt.viz.attention_data import describe, translate_and_explain
from nmt.viz.html_export import render_page
from nmt.viz.search_tree import explain_with_tree

VIEWS = ("matrix", "model", "head", "tree")


class InlineView:
    """A self-contained page that Jupyter draws inline, in an iframe as tall
    as its content: the page posts its height to the notebook whenever it
    changes (a ResizeObserver; `height` None, the default), starting from
    an estimate made from the data so that nothing is cut where the
    notebook runs no script; an int `height` fixes it (pixels)."""

    def __init__(self, page: str, height: int | None, estimate: int = 600):
        self.html, self.height, self.estimate = page, height, estimate

    def _repr_html_(self) -> str:
        frame = f"nmt-view-{uuid.uuid4().hex}"
        tall = self.height or self.estimate
        fit = "" if self.height else (
            f'<script>(function () {{ var f = document.getElementById("{frame}");'
            ' window.addEventListener("message", function (e) {'
            ' if (f && e.source === f.contentWindow && e.data && typeof e.data.nmtHeight === "number"'
            f' && e.data.nmtHeight >= {MIN_HEIGHT})'
            f' f.style.height = Math.min(Math.ceil(e.data.nmtHeight) + 2, {MAX_HEIGHT}) + "px"; }});'
            ' f.contentWindow.postMessage("nmt-height?", "*"); })();</script>')    # a height posted before this ran
        return (f'<iframe class="nmt-view" id="{frame}" srcdoc="{html.escape(self.html, quote=True)}" '
                f'style="width: 100%; height: {tall}px; border: 0" sandbox="allow-scripts"></iframe>' + fit)

    def save(self, path, overwrite: bool = False) -> None:
        """Write the page to `path` whole, to open in a browser. An existing file is
        replaced only when it is a page nmt wrote, or with `overwrite=True`
        (nmt.base.own_files); anything else is NmtError and the file stays as it was."""
        check_output(path, "save:")
        own_files.check_replace(path, "save:", own_files.PAGE, overwrite, allow="overwrite=True")
        try:
            own_files.write(path, self.html.encode("utf-8"), own_files.PAGE)
        except OSError as error:
            raise NmtError(f"cannot write {path}: {error.strerror or error}") from None


def view_page(translator, result: dict, view: str, name: str = "model") -> str:
    """The page showing `view` of one explained translation (`result`, from
    nmt.viz.attention_data.explain or nmt.viz.search_tree.explain_with_tree)."""
    if view not in VIEWS:
        raise ValueError(f"view={view!r} unknown; choose one of {VIEWS}")
    return render_page({"mode": "static", "view": view, "title": f"nmt {view} view",
                        "models": [{"name": name, "description": describe(translator)}],
                        "sentences": [{"line": 1, "source": result["source"], "results": [result]}]})


MAX_HEIGHT = 20_000      # pixels of an iframe: a tall page scrolls inside it
MIN_HEIGHT = 60          # a height posted below this is a frame measured before it was laid out: ignored


def shown_only(result: dict, view: str) -> dict:
    """`result` with only what `view` draws: the matrix and head views one
    map (cross-attention, the first) and any explanation maps, the tree none (its nodes carry their
    own attention; `tree["dims"]` says which layer and heads that is), the
    model view every map."""
    maps = result.get("maps") or []
    if view in ("matrix", "head"):      # explanations (named explain-METHOD, first) stay beside the attention
        explanations = [m for m in maps if m["name"].startswith("explain-")]
        return {**result, "maps": explanations + [m for m in maps if m not in explanations][:1]}
    if view == "tree" and result.get("tree"):
        cross = next((m for m in maps if m["name"] == "cross"), None)
        dims = {"layers": len(cross["layers"]), "heads": len(cross["layers"][0])} if cross else None
        return {**result, "maps": [], "tree": {**result["tree"], "dims": dims}}
    return result


def estimated_height(result: dict, view: str) -> int:
    """Pixels the view needs, from its data (the page's own sizes): the
    iframe's first height, so that a notebook that runs no script cuts nothing."""
    page = 300                                         # title, help, scale pick, panel header
    maps = result.get("maps") or []
    if view == "tree":
        tree = result.get("tree") or {}
        return page + 640 + 30 * len(tree.get("finals", [])) + 28 * len(tree.get("src_pieces", [])) // 2 + 400
    if not maps:
        return page
    first = maps[0]
    R, C = len(first["rows"]), len(first["cols"])
    cell = max(14, min(32, 560 // max(C, 1)))
    longest = max((len(c) for c in first["cols"]), default=1) * 7.2
    heat = min(180, max(36, longest * 0.72 + 22)) + max(R * cell, 120) + 80
    if view == "head":
        return page + 90 + max(R, C) * 22 + 40
    if view == "model":
        thumbs = sum(len(m["layers"]) * (max(2, min(10, 96 // max(len(m["rows"]), len(m["cols"]), 1)))
                                         * len(m["rows"]) + 10) + 80 for m in maps)
        return page + heat + thumbs
    return page + heat


def inline(translator, result: dict, view: str, height: int | None) -> InlineView:
    """The InlineView of `view` of one explained translation, embedding only what it shows."""
    shown = shown_only(result, view)
    return InlineView(view_page(translator, shown, view), height, min(MAX_HEIGHT, round(estimated_height(shown, view))))


def check_view_args(translator, text, beam_size, prefix, height) -> None:
    """NmtError naming the first argument of a view that is not what it takes."""
    if not (hasattr(translator, "translate") and hasattr(translator, "tokenizer")):
        raise NmtError(f"translator must be an nmt Translator (Translator.from_checkpoint), not "
                       f"{type(translator).__name__}")
    for name, value in (("text", text), ("prefix", prefix)):
        if (value is not None or name == "text") and not isinstance(value, str):
            raise NmtError(f"{name}={value!r:.40} must be text, not {type(value).__name__}")
    for name, value, low, high in (("beam_size", beam_size, 1, None), ("height", height, 1, MAX_HEIGHT)):
        if name == "height" and value is None:          # fitted to the content
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low or \
                (high is not None and value > high):
            raise NmtError(f"{name}={value!r:.40} must be a whole number from {low}"
                           + (f" to {high}" if high else " up") + (" (pixels)" if name == "height" else ""))


def heatmap(translator, text: str, beam_size: int = 1, prefix: str | None = None, height: int | None = None,
            explain: str | None = None, top_k: int | None = None) -> InlineView:
    """The matrix view of `text`'s translation: one map, layer and head at a time, hover to read.
    `explain`: a method of nmt.explain.METHODS, its map shown first (the attention maps
    stay in the map selector); `top_k`: each step's k most probable subwords, on hover."""
    check_view_args(translator, text, beam_size, prefix, height)
    from nmt.explain import check_method
    from nmt.viz.explanation_maps import explain_result

    methods = [check_method(explain, "explain=")] if explain is not None else []
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1):
        raise NmtError(f"top_k={top_k!r:.40} must be a whole number from 1 up, or None")
    result = translate_and_explain(translator, text, beam_size, prefix)
    if methods or top_k:
        explain_result(translator, result, methods, top_k)
    return inline(translator, result, "matrix", height)


def model_view(translator, text: str, beam_size: int = 1, prefix: str | None = None,
               height: int | None = None) -> InlineView:
    """Every layer x head of every attention as thumbnails; click one to open it large."""
    check_view_args(translator, text, beam_size, prefix, height)
    return inline(translator, translate_and_explain(translator, text, beam_size, prefix), "model", height)


def head_view(translator, text: str, beam_size: int = 1, prefix: str | None = None,
              height: int | None = None) -> InlineView:
    """One layer's attention as lines between the subwords, one colour per head."""
    check_view_args(translator, text, beam_size, prefix, height)
    return inline(translator, translate_and_explain(translator, text, beam_size, prefix), "head", height)


def beam_tree(translator, text: str, beam_size: int = 5, prefix: str | None = None,
              height: int | None = None) -> InlineView:
    """The beam search of `text` as a tree; click a node to see its prefix's attention."""
    check_view_args(translator, text, beam_size, prefix, height)
    if beam_size < 2:
        raise NmtError(f"the beam tree needs beam_size 2 or more (got {beam_size})")
    return inline(translator, explain_with_tree(translator, text, beam_size, prefix), "tree", height)
