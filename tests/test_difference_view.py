"""Compare and what if side by side with their difference view; the beam tree's layout; the
notebook views' heights and contents; per-token log P (nmt.viz.token_scores)."""

import json

import numpy as np
import pytest

from tests.test_attention_html import DATE, attributes
from tests.test_explore import explorer, post, transformer_checkpoint  # noqa: F401 (fixtures)


def two_model_page(tmp_path) -> str:
    """A static page of two hand-made panels: 2 output rows x 3 source subwords each, the second
    row's subword differs, B's attention moved from column 0 to column 2 on row 0."""
    from nmt.viz.html_export import render_page

    def result(rows, weights, logp, score):
        return {"source": "a b c", "text": " ".join(rows[:-1]), "beam_size": 1, "ranking": "nmt", "score": score,
                "src_pieces": ["a", "b", "c"], "tgt_pieces": rows, "forced": 0, "truncated": False,
                "token_logp": logp,
                "maps": [{"name": "cross", "title": "cross", "rows": rows, "cols": ["a", "b", "c"],
                          "row_axis": "target", "col_axis": "source", "center": None, "window": None,
                          "exact_zeros": False, "mask": None, "layers": [[weights]]}]}

    a = result(["x", "</s>"], [[0.7, 0.2, 0.1], [0.2, 0.3, 0.5]], [-0.5, -0.25], -0.75)
    b = result(["z", "</s>"], [[0.1, 0.2, 0.7], [0.2, 0.3, 0.5]], [-2.0, -0.5], -2.5)
    data = {"mode": "static", "title": "hand", "models": [{"name": "m0", "description": ""},
                                                         {"name": "m1", "description": ""}],
            "sentences": [{"line": 1, "source": "a b c", "results": [a, b]}]}
    path = tmp_path / "two.html"
    path.write_text(render_page(data), encoding="utf-8")
    return path.as_uri()


@pytest.mark.parametrize("width", [1280, 1920])
def test_two_panels_side_by_side_with_their_difference(browser_page, tmp_path, width):
    page, problems = browser_page(two_model_page(tmp_path), width=width)
    boxes = page.locator(".pair > .panel").evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right]; })")
    maps = page.locator(".pair .heatmap-box").evaluate_all("els => els.map(e => e.getBoundingClientRect().top)")
    cells = {(int(r), int(c)): v for r, c, v in attributes(page, "svg.diff-map rect.diff-cell",
                                                          "data-row", "data-col", "data-value")}
    changed = page.locator("svg.diff-map text.diff-row.changed:not(.diff-logp)").all_text_contents()
    summary = page.inner_text(".diff-summary")
    legend = page.inner_text(".diff-legend")
    logp = page.locator("svg.diff-map text.diff-logp").all_text_contents()
    assert len(boxes) == 2 and boxes[0][1] == boxes[1][1] and boxes[0][2] <= boxes[1][0]   # beside, one top
    assert maps[0] == maps[1]                                       # row t beside row t
    assert {k: round(float(v), 4) for k, v in cells.items()} == {
        (0, 0): -0.6, (0, 1): 0.0, (0, 2): 0.6, (1, 0): 0.0, (1, 1): 0.0, (1, 2): 0.0}    # B - A, by hand
    assert changed == ["\u2260 x", "z"]                             # row 0's subwords differ, on both sides
    assert summary == ("score -2.500 \u2212 -0.750 = \u22121.750; log P(output | source) -2.500 \u2212 -0.750 = "
                       "\u22121.750 (natural log); 1 of 2 output rows differ")
    assert logp == ["-0.50  -2.00  \u22121.50", "-0.25  -0.50  \u22120.25"]
    assert legend.startswith("one diverging scale for the difference, absolute \u22121 to +1: red, B attends more")
    page.select_option("#scale", "relative")
    assert page.locator("svg.diff-map").get_attribute("data-top") == "0.6"     # the largest |difference|
    assert "relative \u22120.6000 to +0.6000 (the largest |difference| shown)" in page.inner_text(".diff-legend")
    assert problems == []


@pytest.mark.parametrize("width", [1280, 1920])
def test_compare_and_what_if_in_the_explorer(browser_page, explorer, width):  # noqa: F811
    page, problems = browser_page(explorer, width=width, height=1080)
    page.wait_for_selector("svg.diff-map")                          # compare: A and B, then their difference
    compare = page.locator(".pair > .panel").evaluate_all("els => els.map(e => e.getBoundingClientRect().top)")
    titles = page.locator(".pair > .panel h2").all_inner_texts()
    said = page.inner_text(".diff-view h3")
    page.fill("#source", DATE)
    page.fill("#prefix", "0 3")
    page.click("#force")
    page.wait_for_function("document.querySelectorAll('.panel.forced').length == 2 && "
                           "document.querySelectorAll('.diff-view').length == 2")
    pairs = page.locator(".pair").evaluate_all("els => els.map(p => Array.from(p.children).map(c => "
                                               "[c.getBoundingClientRect().top, c.getBoundingClientRect().left, "
                                               "c.classList.contains('forced')]))")
    forced_top = page.locator(".panel.forced").first.evaluate("e => e.getBoundingClientRect().top")
    diff_rows = page.locator(".diff-view").first.locator("svg.diff-map text.diff-logp").count()
    free_rows = page.locator(".pair").first.locator(".panel:not(.forced) svg.heatmap rect.cell[data-col='0']").count()
    assert len(compare) == 2 and compare[0] == compare[1] and titles[0].startswith("A: ") and titles[1].startswith("B:")
    assert said == "Difference: B \u2212 A"
    assert len(pairs) == 2 and all(len(p) == 2 and p[0][0] == p[1][0] and p[0][1] < p[1][1] and p[1][2]
                                   for p in pairs)              # free then forced, beside it, one per model
    assert 0 <= forced_top < 1080                                   # scrolled to: the new result is in view
    assert diff_rows >= free_rows > 0                               # every row of the longer translation
    assert problems == []


def test_token_log_probs_sum_to_the_greedy_score(toy_checkpoint):
    from nmt.translator import Translator
    from nmt.viz.attention_data import translate_and_explain

    translator = Translator.from_checkpoint(toy_checkpoint, device="cpu")
    result = translate_and_explain(translator, DATE, 1)
    assert len(result["token_logp"]) == len(result["tgt_pieces"])
    assert sum(result["token_logp"]) == pytest.approx(result["score"], abs=1e-3)
    forced = translate_and_explain(translator, DATE, 1, prefix="0 3")
    assert sum(forced["token_logp"]) == pytest.approx(forced["score"], abs=1e-3)     # the forced subwords too
    assert all(v <= 0 for v in forced["token_logp"])


def test_each_beam_node_is_drawn_after_its_parent(browser_page, toy_checkpoint, tmp_path):
    from nmt.translator import Translator
    from nmt.viz import notebook

    translator = Translator.from_checkpoint(toy_checkpoint, device="cpu")
    view = notebook.beam_tree(translator, DATE, beam_size=3)
    path = tmp_path / "tree.html"
    path.write_text(view.html, encoding="utf-8")
    page, problems = browser_page(path.as_uri())
    nodes = {int(n): (p, int(s), float(x), float(y), float(w)) for n, p, s, x, y, w in attributes(
        page, "svg.beam-tree g.node", "data-node", "data-parent", "data-step", "data-x", "data-y", "data-width")}
    edges = attributes(page, "svg.beam-tree path.edge", "data-from", "data-to", "d")
    tree = json.loads(view.html.split("const NMT = ", 1)[1].split(";\n", 1)[0].replace("\\u003c", "<"))
    tree = tree["sentences"][0]["results"][0]["tree"]
    assert len(nodes) == len(tree["nodes"]) and len(edges) == len(nodes) - 1
    for n in tree["nodes"]:
        parent, step, x, y, w = nodes[n["id"]]
        assert step == n["step"]
        if n["parent"] is None:
            continue
        px, py, pw = nodes[n["parent"]][2:]
        assert int(parent) == n["parent"] and px + pw < x               # the parent at its left
    for start, end, d in edges:                                        # each edge: parent's right -> child's left
        px, py, pw = nodes[int(start)][2:]
        x, y = nodes[int(end)][2], nodes[int(end)][3]
        head, tail = d.split(" C")[0][1:].split(","), d.rsplit(" ", 1)[1].split(",")
        assert float(head[0]) == pytest.approx(px + pw) and float(tail[0]) == pytest.approx(x)
        assert float(head[1]) == pytest.approx(py + 9) and float(tail[1]) == pytest.approx(y + 9)
    leaves = [n for n in tree["nodes"] if not any(m["parent"] == n["id"] for m in tree["nodes"])]
    assert len({nodes[n["id"]][3] for n in leaves}) == len(leaves)     # one row for each leaf: none overlap
    faded = page.locator("svg.beam-tree g.node.faded").count()
    assert 0 < faded < len(nodes)                                      # branches no final continues
    page.locator("svg.beam-tree g.node.final[data-rank='1']").click()
    assert page.inner_text(".prefix-title").startswith("Attention of this prefix: the decoder's one attention")
    assert problems == []


def test_a_clicked_node_can_show_any_layer_and_head(explorer, transformer_checkpoint):  # noqa: F811
    from nmt.translator import Translator
    from nmt.viz.search_tree import explain_with_tree

    translator = Translator.from_checkpoint(transformer_checkpoint, device="cpu")
    result = explain_with_tree(translator, DATE, 2)
    final = result["tree"]["finals"][0]
    by_id = {n["id"]: n for n in result["tree"]["nodes"]}
    tokens, node = [], by_id[final["node"]]
    while node["parent"] is not None:
        tokens.insert(0, node["token"])
        node = by_id[node["parent"]]
    tokens = tokens[:-1]                                               # without its </s>: a prefix
    status, reply = post(explorer, json.dumps({"model": 1, "text": DATE, "tokens": tokens}).encode(),
                         "/api/prefix")
    assert status == 200
    cross = result["maps"][0]["layers"]                                # (L, H, T, S) of the same translation
    got = reply["map"]["layers"]
    assert len(got) == len(cross) and len(got[0]) == len(cross[0]) and len(got[0][0]) == len(tokens)
    assert np.abs(np.array(got[0][1]) - np.array(cross[0][1][:len(tokens)])).max() <= 2e-4   # its rows, teacher-forced
    status, reply = post(explorer, json.dumps({"model": 1, "text": DATE, "tokens": [10 ** 9]}).encode(),
                         "/api/prefix")
    assert status == 400 and reply["error"].startswith("tokens must be a non-empty list of target ids from 0 to")


def test_notebook_views_fit_their_content_and_embed_what_they_show(browser_page, transformer_checkpoint, tmp_path):  # noqa: F811
    from nmt.translator import Translator
    from nmt.viz import notebook

    translator = Translator.from_checkpoint(transformer_checkpoint, device="cpu")
    views = {"matrix": notebook.heatmap(translator, DATE), "model": notebook.model_view(translator, DATE),
             "head": notebook.head_view(translator, DATE), "tree": notebook.beam_tree(translator, DATE, beam_size=2)}
    cell = tmp_path / "cell.html"
    cell.write_text("".join(v._repr_html_() for v in views.values()), encoding="utf-8")
    page, problems = browser_page(cell.as_uri())
    for frame, element in zip(page.frames[1:], page.locator("iframe.nmt-view").all()):
        frame.wait_for_selector(".panel")
        element.scroll_into_view_if_needed()                           # Chromium lays out a frame in view
        page.wait_for_timeout(300)                                     # its height posted and applied
    outer = page.locator("iframe.nmt-view").evaluate_all("els => els.map(e => e.getBoundingClientRect().height)")
    inner = [frame.evaluate("Math.ceil(document.body.getBoundingClientRect().bottom + "
                            "parseFloat(getComputedStyle(document.body).marginBottom))") for frame in page.frames[1:]]
    data = {name: json.loads(v.html.split("const NMT = ", 1)[1].split(";\n", 1)[0]) for name, v in views.items()}
    shown = {name: [m["name"] for m in d["sentences"][0]["results"][0]["maps"]] for name, d in data.items()}
    assert all(o >= i and o - i <= 4 for o, i in zip(outer, inner)), (outer, inner)   # nothing cut, no gap
    assert shown == {"matrix": ["cross"], "head": ["cross"], "model": ["cross", "encoder-self", "decoder-self"],
                     "tree": []}
    assert data["tree"]["sentences"][0]["results"][0]["tree"]["dims"] == {"layers": 2, "heads": 2}
    assert f'height: {views["matrix"].estimate}px' in views["matrix"]._repr_html_()
    assert "height: 300px" in notebook.heatmap(translator, DATE, height=300)._repr_html_()
    assert problems == []


def test_a_large_difference_is_one_picture(browser_page, tmp_path):
    """70 x 70 maps (over CELL_BUDGET cells): the difference is painted a pixel a cell, not drawn as
    4,900 rects; A the identity, B the identity shifted one column, so B - A is -1 on the diagonal
    (blue, #2166ac), +1 right of it (red, #b2182b) and 0 elsewhere (white, #f7f7f7); hovering reads it."""
    from nmt.viz.html_export import render_page

    n, pieces = 70, [f"p{i}" for i in range(70)]
    rows = pieces[:-1] + ["</s>"]

    def result(weights):
        return {"source": " ".join(pieces), "text": " ".join(rows[:-1]), "beam_size": 1, "ranking": "nmt",
                "score": -1.0, "src_pieces": pieces, "tgt_pieces": rows, "forced": 0, "truncated": False,
                "maps": [{"name": "cross", "title": "cross", "rows": rows, "cols": pieces, "row_axis": "target",
                          "col_axis": "source", "center": None, "window": None, "exact_zeros": False,
                          "mask": None, "layers": [[weights.tolist()]]}]}

    path = tmp_path / "large.html"
    path.write_text(render_page({"mode": "static", "title": "large", "models": [
        {"name": "m0", "description": ""}, {"name": "m1", "description": ""}], "sentences": [
        {"line": 1, "source": " ".join(pieces), "results": [result(np.eye(n)), result(np.roll(np.eye(n), 1, 1))]}]}),
        encoding="utf-8")
    page, problems = browser_page(path.as_uri(), width=1920)
    page.locator("svg.diff-map image.diff-image").wait_for()
    assert page.locator("svg.diff-map rect.diff-cell").count() == 0
    colours = page.evaluate("""async () => {
        const image = new Image();
        image.src = document.querySelector("svg.diff-map image.diff-image").getAttribute("href");
        await image.decode();
        const canvas = document.createElement("canvas"); canvas.width = image.width; canvas.height = image.height;
        const ctx = canvas.getContext("2d"); ctx.drawImage(image, 0, 0);
        return [image.width, image.height, ...[[0, 0], [0, 1], [0, 2], [69, 69], [69, 0]].map(
            ([t, c]) => Array.from(ctx.getImageData(c, t, 1, 1).data.slice(0, 3)))];
    }""")
    assert colours == [n, n, [33, 102, 172], [178, 24, 43], [247, 247, 247], [33, 102, 172], [178, 24, 43]]
    overlay = page.locator("svg.diff-map rect.diff-overlay")
    overlay.scroll_into_view_if_needed()
    box = overlay.bounding_box()
    cell = box["width"] / n
    page.mouse.move(box["x"] + 1.5 * cell, box["y"] + 0.5 * cell)               # row 0, column 1
    assert page.locator("#tooltip").inner_text().endswith("= +1.0000")
    assert "grey: a row only one translation has" in page.inner_text(".diff-legend")
    assert problems == []
