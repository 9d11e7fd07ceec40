"""The model view, head view, beam tree and what if, in headless Chromium, and inline in Jupyter."""

import json
import os
import re

import pytest

from tests.helpers import run_cli
from tests.test_attention_html import DATE, attributes, launch_chromium, needs_chromium
from tests.test_explore import explorer, post, transformer_checkpoint  # noqa: F401 (fixtures)

# A folder to keep the tests' screenshots in, to look at. They are of the tests' barely trained
# models, so each is named NAME_untrained.png and never replaces a docs picture (those come from
# trained models: scripts/docs/docs_views.py, docs_explorer_shots.py, docs_hf_tree.py).
DOCS = os.environ.get("NMT_VIEW_SCREENSHOTS")


def keep_screenshot(page, name: str) -> None:
    """With NMT_VIEW_SCREENSHOTS=FOLDER: the page as FOLDER/NAME_untrained.png."""
    if DOCS:
        page.screenshot(path=f"{DOCS}/{name}_untrained.png", full_page=True)


def open_page(playwright, url, problems, width=1400, requests=None):
    """A headless page at `url`: console errors into `problems`, every request's URL into `requests`."""
    browser = launch_chromium(playwright)
    # wait_for_function's strings run through eval, which the explorer's policy forbids
    # (tests/test_explore_guard.py opens the page under the policy)
    page = browser.new_page(viewport={"width": width, "height": 1000}, bypass_csp=True)
    page.set_default_timeout(90_000)          # a busy 2-core machine: seconds, never a hang
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    if requests is not None:
        page.on("request", lambda r: requests.append(r.url))
    page.goto(url)
    return browser, page


def attention_html(checkpoint, tmp_path, name, *options) -> str:
    """`nmt.translate --attention-html` as a user runs it -> the page's URL."""
    html = tmp_path / f"{name}.html"
    result = run_cli("nmt.translate", "--checkpoint", str(checkpoint), "--attention-html", str(html),
                     "--output", str(tmp_path / f"{name}.txt"), *options, input=f"{DATE}\n".encode())
    assert result.returncode == 0, result.stderr.decode()
    return html.as_uri()


def cell_values(page, selector="svg.heatmap"):
    """(row, col) -> the weight a heatmap's cell holds."""
    return {(int(row), int(col)): float(value)
            for row, col, value in attributes(page, f"{selector} rect.cell", "data-row", "data-col", "data-value")}


@needs_chromium
def test_model_view_shows_every_layer_and_head(transformer_checkpoint, toy_checkpoint, tmp_path):  # noqa: F811
    from playwright.sync_api import sync_playwright

    problems = []
    with sync_playwright() as playwright:
        browser, page = open_page(playwright, attention_html(transformer_checkpoint, tmp_path, "tr"), problems)
        thumbs = {name: page.locator(f"canvas.thumb[data-map='{name}']").count()
                  for name in ("cross", "encoder-self", "decoder-self")}
        # click cross-attention layer 1, head 2: the large map becomes that one, hover and all
        page.click("canvas.thumb[data-map='cross'][data-layer='1'][data-head='2']")
        chosen = (page.input_value(".map-select"), page.input_value(".layer-select"), page.input_value(".head-select"))
        picked = page.locator("canvas.thumb.picked").count()
        large = cell_values(page)
        page.hover("svg.heatmap rect.cell[data-row='0'][data-col='0']")
        tip = page.inner_text("#tooltip")
        page.mouse.move(0, 0)
        keep_screenshot(page, "model_view")
        browser.close()
        rnn_problems = []
        browser, page = open_page(playwright, attention_html(toy_checkpoint, tmp_path, "rnn"), rnn_problems)
        rnn_thumbs = page.locator("canvas.thumb").count()
        browser.close()
    data = json.loads(re.search(r"const NMT = (.*?);\n", (tmp_path / "tr.html").read_text()).group(1))
    cross = data["sentences"][0]["results"][0]["maps"][0]
    assert thumbs == {"cross": 4, "encoder-self": 4, "decoder-self": 4}     # 2 layers x 2 heads each
    assert rnn_thumbs == 1                                                  # an RNN's one map
    assert chosen == ("cross", "1", "2") and picked == 1
    assert large == {(r, c): v for r, row in enumerate(cross["layers"][0][1]) for c, v in enumerate(row)}
    assert tip.startswith(f"target \u201c{cross['rows'][0]}\u201d")
    assert problems == [] and rnn_problems == []


@needs_chromium
def test_head_view_lines_follow_the_matrix(transformer_checkpoint, tmp_path):  # noqa: F811
    from playwright.sync_api import sync_playwright

    def lines(page, head):
        return {(int(row), int(col)): float(opacity) for row, col, opacity in
                attributes(page, f"svg.head-view line[data-head='{head}']", "data-row", "data-col", "stroke-opacity")}

    problems = []
    with sync_playwright() as playwright:
        browser, page = open_page(playwright, attention_html(transformer_checkpoint, tmp_path, "tr"), problems)
        page.select_option(".layer-select", "1")
        page.select_option(".head-select", "2")                 # the matrix shows head 2; so do the lines
        matrix_2, lines_2, lines_1 = cell_values(page), lines(page, 2), lines(page, 1)
        page.check(".head-toggle input[data-head='1']")          # head 1 toggled on beside it
        both = (lines(page, 1), lines(page, 2))
        colours = {stroke for stroke, in attributes(page, "svg.head-view line", "stroke")}
        keep_screenshot(page, "head_view")
        page.uncheck(".head-toggle input[data-head='2']")
        after_toggle = page.locator("svg.head-view line[data-head='2']").count()
        page.select_option(".head-select", "1")
        matrix_1 = cell_values(page)
        browser.close()
    positive = lambda m: {k: v for k, v in m.items() if v > 0}
    assert lines_2 == positive(matrix_2) and lines_1 == {}           # opacity = the weight, head 2 only
    assert both[0] == positive(matrix_1) and both[1] == lines_2      # head 1 added, the same values
    assert len(colours) == 2 and after_toggle == 0                   # a colour per head; toggled off
    assert problems == []


def nbest_lines(checkpoint, beam: int) -> list[tuple[str, str]]:
    result = run_cli("nmt.translate", "--checkpoint", str(checkpoint), "--beam-size", str(beam),
                     "--nbest", str(beam), input=f"{DATE}\n".encode())
    assert result.returncode == 0, result.stderr.decode()
    return [tuple(line.split(" ||| ")[1:]) for line in result.stdout.decode().splitlines()]


@needs_chromium
def test_beam_tree_finals_equal_nbest_and_what_if_forces_the_prefix(explorer, toy_checkpoint, tmp_path):  # noqa: F811
    from playwright.sync_api import sync_playwright

    nbest = nbest_lines(toy_checkpoint, 3)
    tree_file = tmp_path / "tree.json"
    result = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--beam-size", "3",
                     "--beam-tree", str(tree_file), input=f"{DATE}\n".encode())
    assert result.returncode == 0, result.stderr.decode()
    tree = json.loads(tree_file.read_text())
    assert [(f["text"], f"{f['score']:.4f}") for f in tree["finals"]] == nbest
    states = {n["state"] for n in tree["nodes"]}
    assert {"root", "kept", "pruned", "finished"} <= states
    problems = []
    with sync_playwright() as playwright:
        browser, page = open_page(playwright, explorer, problems)
        page.wait_for_function("document.querySelectorAll('svg.heatmap').length == 2")
        page.fill("#source", DATE)
        page.select_option("#beam", "3")
        page.click("#go")
        page.wait_for_function(f"document.getElementById('results').dataset.source === {DATE!r} && "
                               "document.querySelector('svg.beam-tree') !== null")
        rnn = page.locator(".panel").nth(0)
        rows = [(r.locator("td.text").inner_text(), r.locator("td.final-score").inner_text())
                for r in rnn.locator("tr.final-row").all()]
        pruned = rnn.locator("g.node.pruned").count()
        rnn.locator("g.node.final[data-rank='1']").click()          # its prefix's attention
        prefix_rows = rnn.locator("svg.prefix-heatmap rect.cell[data-col='0']").count()
        keep_screenshot(page, "beam_tree")
        # what if: the translation is forced to start with a prefix the model did not choose
        free = rnn.locator(".translation-text").inner_text()
        prefix = "0 3" if not free.startswith("0 3") else "1 7"
        page.fill("#prefix", prefix)
        page.click("#force")
        page.wait_for_function("document.querySelectorAll('.panel.forced').length == 2")
        forced = page.locator(".panel.forced").nth(0)
        forced_text = forced.locator(".translation-text").inner_text()
        forced_score = forced.locator(".score").inner_text()
        beside = page.locator(".panel").nth(0).locator(".translation-text").inner_text()
        keep_screenshot(page, "what_if")
        browser.close()
    assert rows == nbest and pruned > 0
    assert prefix_rows == tree["finals"][0]["length"]               # one row per subword of the final, </s> too
    assert forced_text.startswith(prefix + " ") and forced_text != free and beside == free
    assert "first 2 subwords were forced" in forced_score
    assert problems == []


def test_a_prefix_longer_than_the_limit_is_one_line(explorer, toy_checkpoint):  # noqa: F811
    from nmt.base.errors import NmtError
    from nmt.translator import Translator

    status, reply = post(explorer, json.dumps({"text": "friday", "prefix": " ".join(["0"] * 40)}).encode())
    assert status == 200                                   # each model says its own problem
    assert all(r["error"].startswith("the prefix has 40 subwords but an output for a source of")
               for r in reply["forced"])
    translator = Translator.from_checkpoint(toy_checkpoint, device="cpu")
    with pytest.raises(NmtError, match="shorten the prefix or raise --max-length-extra"):
        translator.translate(["friday"], prefix=" ".join(["0"] * 40))
    status, reply = post(explorer, json.dumps({"text": "friday", "prefix": 3}).encode())
    assert status == 400 and reply["error"].startswith("prefix must be a string")


def test_beam_tree_bad_input_is_one_line(toy_checkpoint, tmp_path):
    two = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--beam-tree", str(tmp_path / "t.json"),
                  input=f"{DATE}\nfriday\n".encode())
    greedy = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--beam-size", "1",
                     "--beam-tree", str(tmp_path / "t.json"), input=f"{DATE}\n".encode())
    assert two.returncode == 1 and two.stderr.decode() == (
        "nmt: error: --beam-tree records the search of one sentence; the input has 2 non-empty lines: give one\n")
    assert greedy.returncode == 1 and greedy.stderr.decode().count("\n") == 1
    assert "set --beam-size to 2 or more" in greedy.stderr.decode()
    assert not (tmp_path / "t.json").exists()


@needs_chromium
def test_notebook_views_render_inline(transformer_checkpoint, tmp_path):  # noqa: F811
    from playwright.sync_api import sync_playwright

    from nmt.translator import Translator
    from nmt.viz import notebook

    translator = Translator.from_checkpoint(transformer_checkpoint, device="cpu")
    views = {"matrix": notebook.heatmap(translator, DATE), "model": notebook.model_view(translator, DATE),
             "head": notebook.head_view(translator, DATE), "tree": notebook.beam_tree(translator, DATE, beam_size=2)}
    cell = tmp_path / "cell.html"          # what Jupyter puts in an output cell: the _repr_html_ of each
    cell.write_text("".join(v._repr_html_() for v in views.values()), encoding="utf-8")
    problems, requests, seen = [], [], {}
    with sync_playwright() as playwright:
        browser, page = open_page(playwright, cell.as_uri(), problems, requests=requests)
        for frame, name in zip(page.frames[1:], views):
            frame.wait_for_selector(".panel")                     # each frame's script has drawn its view
            seen[name] = {what: frame.locator(selector).count() for what, selector in (
                ("heatmap", "svg.heatmap"), ("thumbs", "canvas.thumb"), ("lines", "svg.head-view line"),
                ("tree", "svg.beam-tree"))}
            seen[name]["shown"] = {what: frame.locator(selector).first.is_visible() if frame.locator(selector).count()
                                   else False for what, selector in (("heatmap", "svg.heatmap"),
                                                                      ("head", "svg.head-view"))}
        browser.close()
    assert seen["matrix"]["shown"] == {"heatmap": True, "head": False}
    assert seen["model"]["thumbs"] == 12 and seen["model"]["shown"]["heatmap"]
    assert seen["head"]["lines"] > 0 and seen["head"]["shown"] == {"heatmap": False, "head": True}
    assert seen["tree"]["tree"] == 1 and not seen["tree"]["shown"]["heatmap"]
    assert problems == [] and requests == [cell.as_uri()]          # no network: everything is inline
    with pytest.raises(Exception, match="beam_size 2 or more"):
        notebook.beam_tree(translator, DATE, beam_size=1)


@needs_chromium
def test_reference_links_on_the_map_with_their_aer(toy_checkpoint, tmp_path):
    from playwright.sync_api import sync_playwright

    import numpy as np

    from nmt.data.word_alignment import AerCounts, attention_word_links, shifted_rows, word_index

    links = tmp_path / "reference.links"
    links.write_text("0-0 1-0 2-1\n", encoding="utf-8")
    url = attention_html(toy_checkpoint, tmp_path, "links", "--links", str(links))
    data = json.loads(re.search(r"const NMT = (.*?);\n", (tmp_path / "links.html").read_text()).group(1))
    result = data["sentences"][0]["results"][0]
    weights = np.array(result["maps"][0]["layers"])[0, 0]                   # (T+1, S), the RNN's one map
    src, tgt = result["src_pieces"], result["tgt_pieces"][:-1]
    reference = {(0, 0), (1, 0), (2, 1)}
    same = AerCounts.of(attention_word_links(weights[:-1], src, tgt), reference)
    later = AerCounts.of(attention_word_links(shifted_rows(weights), src, tgt), reference)
    reading = result["alignment"]["readings"]["1-1"]
    assert reading["same"]["aer"] == round(same.aer, 4) and reading["next"]["recall"] == round(later.recall, 4)
    # the squares: every cell whose source and target words are linked
    src_words, tgt_words = word_index(src), word_index(tgt)
    expected = sum((src_words[c], tgt_words[r]) in reference for r in range(len(tgt)) for c in range(len(src)))
    problems = []
    with sync_playwright() as playwright:
        browser, page = open_page(playwright, url, problems)
        squares = page.locator("svg.heatmap rect.link").count()
        said = page.inner_text(".alignment")
        browser.close()
    assert squares == expected > 0
    assert said.startswith("reference links (red squares, 3): read at the same step AER "
                           f"{same.aer:.3f} (precision {same.precision:.3f}, recall {same.recall:.3f})")
    assert problems == []


def test_links_that_do_not_fit_are_one_line(toy_checkpoint, tmp_path):
    links = tmp_path / "links.txt"
    links.write_text("0-0 0-99\n", encoding="utf-8")
    html = tmp_path / "a.html"
    result = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--attention-html", str(html),
                     "--links", str(links), input=f"{DATE}\n".encode())
    err = result.stderr.decode()
    assert result.returncode == 1 and err.count("\n") == 1 and not html.exists()
    assert err.startswith("nmt: error: --links line 1: link 0-99 does not fit the sentence: the source has 9 words")
    links.write_text("0-0 x\n", encoding="utf-8")
    result = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--attention-html", str(html),
                     "--links", str(links), input=f"{DATE}\n".encode())
    assert result.returncode == 1 and result.stderr.decode().startswith("nmt: error: --links line 1: 'x' is not")
    result = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--links", str(links),
                     input=f"{DATE}\n".encode())
    assert result.returncode == 1 and "add --attention-html FILE" in result.stderr.decode()


def test_the_explorer_reads_typed_links_and_says_when_they_do_not_fit(toy_checkpoint, tmp_path):
    from fastapi.testclient import TestClient

    from nmt.commands.explore import Model, create_app, read_sample_links
    from nmt.base.errors import NmtError

    model = Model(str(toy_checkpoint), "cpu")
    client = TestClient(create_app([model]), base_url="http://127.0.0.1:8000")
    fits = client.post("/api/translate", json={"text": DATE, "links": "0-0 1-0"}).json()["results"][0]
    outside = client.post("/api/translate", json={"text": DATE, "links": "0-0 50-0"}).json()["results"][0]
    assert fits["alignment"]["links"] == [[0, 0], [1, 0]] and set(fits["alignment"]["readings"]) == {"1-1"}
    assert outside["alignment"]["error"].startswith("the links: link 50-0 does not fit the sentence")
    assert outside["text"] == fits["text"]                       # the translation is still shown
    short = tmp_path / "short.links"
    short.write_text("0-0\n", encoding="utf-8")
    with pytest.raises(NmtError, match=f"has 1 lines but .* holds {len(model.samples)} validation sentences"):
        read_sample_links(str(short), model)
