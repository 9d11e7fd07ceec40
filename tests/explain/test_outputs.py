"""--explain, --top-k and --json as a user calls them, the explorer's API and the
notebook view: what each writes, and one line for what is wrong."""

import json

import pytest
from fastapi.testclient import TestClient

from nmt.base.errors import NmtError
from nmt.commands.explore import Model, create_app
from tests.helpers import one_thread, run_cli  # noqa: F401 - a fixture
from tests.test_attention_html import launch_chromium, needs_chromium

pytestmark = pytest.mark.usefixtures("one_thread")
DATE = "monday the twenty first of march nineteen eighty four"


def test_translate_writes_every_explanation_and_keeps_its_output(toy_checkpoint, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text(f"{DATE}\n\nthe third of may\n", encoding="utf-8")
    plain = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--input", str(source), "--beam-size", "3")
    assert plain.returncode == 0, plain.stderr
    done = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--input", str(source), "--beam-size", "3",
                   "--explain", "saliency", "value-norm", "--top-k", "3", "--json", str(tmp_path / "out.json"),
                   "--plot-attention", str(tmp_path / "maps"), "--attention-html", str(tmp_path / "page.html"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == plain.stdout                              # the search's result is the same
    assert sorted(p.name for p in (tmp_path / "maps").iterdir()) == [
        "00001.png", "00001_saliency.png", "00001_value-norm.png", "00003.png", "00003_saliency.png",
        "00003_value-norm.png"]
    lines = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["lines"]
    assert [line["line"] for line in lines] == [1, 2, 3] and lines[1]["explanations"] == {}
    first = lines[0]
    assert first["text"] == plain.stdout.decode().splitlines()[0]
    T, S = len(first["tgt_pieces"]), len(first["src_pieces"])
    for method in ("saliency", "value-norm"):
        shown = first["explanations"][method]["shown"]
        assert len(shown[0][0]) == T and len(shown[0][0][0]) == S
        assert all(abs(sum(row) - 1) < 1e-4 for row in shown[0][0])
    assert [a["chosen"] for a in first["alternatives"]] == first["tgt_pieces"]
    assert all(len(a["pieces"]) == 3 and 1 <= a["chosen_rank"] for a in first["alternatives"])
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert '"name": "explain-saliency"' in page and "chosen p=" in page


@pytest.mark.parametrize("args, message", [
    (["--explain", "lime", "--json", "x.json"], "nmt: error: --explain lime: unknown method; choose one of "
     "saliency, input-x-gradient, integrated-gradients, rollout, value-norm"),
    (["--explain", "saliency"], "nmt: error: --explain writes its maps into --plot-attention DIR, "
     "--attention-html FILE or --json FILE; add one of them"),
    (["--top-k", "2"], "nmt: error: --top-k 2 writes each step's alternatives into --json FILE or "
     "--attention-html FILE; add one of them"),
    (["--explain", "rollout", "--json", "x.json"], "nmt: error: --explain rollout follows a Transformer decoder's "
     "layers and residuals; this model's decoder is an RNN with one attention (choose value-norm or a gradient "
     "method)"),
])
def test_what_explain_cannot_do_is_one_line(toy_checkpoint, tmp_path, args, message):
    args = [str(tmp_path / a) if a == "x.json" else a for a in args]
    done = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), *args, input=DATE.encode())
    assert done.returncode == 1 and done.stderr.decode().strip() == message
    assert not (tmp_path / "x.json").exists()


def test_the_explorer_explains_on_request(toy_checkpoint):
    app = create_app([Model(str(toy_checkpoint), "cpu")])
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert '"explain_methods"' in client.get("/").text
        reply = client.post("/api/translate", json={"text": DATE, "explain": "input-x-gradient", "top_k": 2}).json()
        result = reply["results"][0]
        assert result["maps"][0]["name"] == "explain-input-x-gradient"      # shown first
        assert len(result["alternatives"]) == len(result["tgt_pieces"])
        assert all(len(tip.split(", ")) == 2 for tip in result["maps"][0]["alternatives"])
        bad = client.post("/api/translate", json={"text": DATE, "explain": "lime"})
        assert bad.status_code == 400 and bad.json()["error"].startswith("explain='lime': unknown method")
        rollout = client.post("/api/translate", json={"text": DATE, "explain": "rollout"}).json()["results"][0]
        assert rollout["explain_error"].startswith("rollout follows a Transformer decoder")
        assert rollout["maps"][0]["name"] == "cross"                          # the rest is kept


def test_the_notebook_heatmap_shows_an_explanation(toy_checkpoint):
    from nmt.translator import Translator
    from nmt.viz import notebook

    translator = Translator.from_checkpoint(toy_checkpoint, device="cpu")
    view = notebook.heatmap(translator, DATE, explain="saliency", top_k=3)
    assert '"name": "explain-saliency"' in view.html and "chosen p=" in view.html
    with pytest.raises(NmtError, match=r"explain='lime': unknown method"):
        notebook.heatmap(translator, DATE, explain="lime")
    with pytest.raises(NmtError, match="top_k=0 must be a whole number from 1 up"):
        notebook.heatmap(translator, DATE, top_k=0)


@needs_chromium
def test_the_page_draws_an_explanation_with_its_alternatives(toy_checkpoint, tmp_path):
    """--attention-html with --explain and --top-k in headless Chromium: the method is in the
    map selector, its map is drawn on the absolute scale, a hovered cell shows the step's
    alternatives, and the page logs no error."""
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "page.html"
    done = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--explain", "integrated-gradients",
                   "--top-k", "3", "--attention-html", str(page_file), input=DATE.encode())
    assert done.returncode == 0, done.stderr
    problems = []
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(page_file.as_uri())
        chooser = page.locator("select.map-select").first
        assert "integrated gradients (Sundararajan et al. 2017)" in chooser.locator("option").all_inner_texts()
        chooser.select_option("explain-integrated-gradients")
        heatmap = page.locator("svg.heatmap").first
        assert heatmap.get_attribute("data-map") == "explain-integrated-gradients"
        assert heatmap.get_attribute("data-scale") == "absolute"
        heatmap.locator("rect.cell").first.hover()
        assert "chosen p=" in page.locator("body").inner_text()
        browser.close()
    assert problems == []
