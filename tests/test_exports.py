"""Exports that carry everything: --attention-html with a beam holds the beam tree,
--plot-attention draws a long sentence as one figure (split only with --plot-columns)
with labels that never overlap, and --hf takes --attention-layer/--attention-head."""

import json
import re

import numpy as np
import pytest

from nmt.viz.heatmaps import _thin_labels, attention_figure
from tests.helpers import run_cli
from tests.test_attention_html import DATE, launch_chromium, needs_chromium


def overlaps(fig) -> list:
    """Pairs of neighbouring tick labels whose drawn boxes overlap, on either axis."""
    fig.canvas.draw()
    ax, found = fig.axes[0], []
    for texts, lo, hi in ((ax.get_xticklabels(), "x0", "x1"), (ax.get_yticklabels(), "y0", "y1")):
        spans = sorted((getattr(b, lo), getattr(b, hi)) for b in (t.get_window_extent() for t in texts if t.get_text()))
        found += [(a, b) for a, b in zip(spans, spans[1:]) if a[1] > b[0] + 0.5]
    return found


@pytest.mark.parametrize("S", [40, 120])
def test_a_long_sentence_is_one_figure_whose_labels_never_overlap(S):
    weights = np.random.default_rng(0).dirichlet(np.ones(S), size=S - 2)
    fig = attention_figure(weights, [f"▁piece{i}" for i in range(S)], [f"▁out{i}" for i in range(S - 2)], "long")
    assert len(fig.axes[0].get_xticklabels()) == S and overlaps(fig) == []


def test_labels_that_would_overlap_are_thinned_and_said():
    S = 40
    weights = np.full((S, S), 1 / S)
    fig = attention_figure(weights, [f"p{i}" for i in range(S)], [f"q{i}" for i in range(S)], "squeezed")
    fig.set_size_inches(3.0, 3.0)                     # far too small for 40 labels a side
    _thin_labels(fig, fig.axes[0], [f"p{i}" for i in range(S)], [f"q{i}" for i in range(S)])
    shown = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert 1 < len(shown) < S and shown[0] == "p0" and overlaps(fig) == []
    assert re.fullmatch(r"source \(every \d+(nd|rd|th) label\)", fig.axes[0].get_xlabel())


transformers_needed = pytest.mark.skipif(
    __import__("importlib").util.find_spec("transformers") is None, reason="the hf extra is not installed")


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.hf_marian import build_tiny_marian

    return build_tiny_marian(tmp_path_factory.mktemp("marian"))


@transformers_needed
def test_plot_attention_writes_one_png_for_a_40_piece_sentence_and_hf_takes_layer_and_head(marian, tmp_path,
                                                                                             monkeypatch):
    import nmt.viz.heatmaps as heatmaps
    from nmt.hf.translator import HFTranslator
    from nmt.commands.translate import main

    words = (DATE.split() * 2)[:16]
    source = " ".join(words)
    S = len(HFTranslator(str(marian), device="cpu").tokenizer.encode_src(source))
    assert S >= 40
    (tmp_path / "in.txt").write_text(source + "\n", encoding="utf-8")
    drawn, real = [], heatmaps.attention_figure
    monkeypatch.setattr(heatmaps, "attention_figure", lambda *a, **k: drawn.append(real(*a, **k)) or drawn[-1])
    common = ["--hf", str(marian), "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "out.txt"),
              "--beam-size", "1"]
    assert main(common + ["--plot-attention", str(tmp_path / "one"), "--attention-layer", "1",
                          "--attention-head", "2"]) == 0
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == ["00001.png"]
    fig, = drawn
    assert len(fig.axes[0].get_xticklabels()) == S and overlaps(fig) == []
    assert fig.get_suptitle().endswith("cross-attention, layer 1/2, head 2/2")
    assert main(common + ["--plot-attention", str(tmp_path / "split"), "--plot-columns", "16"]) == 0
    assert len(list((tmp_path / "split").iterdir())) == -(-S // 16)
    assert main(common + ["--plot-attention", str(tmp_path / "bad"), "--attention-layer", "3"]) == 1


@needs_chromium
def test_attention_html_with_a_beam_holds_the_beam_tree(toy_checkpoint, tmp_path):
    from playwright.sync_api import sync_playwright

    html = tmp_path / "a.html"
    result = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--beam-size", "5",
                     "--attention-html", str(html), input=f"{DATE}\n".encode())
    assert result.returncode == 0, result.stderr.decode()
    data = json.loads(re.search(r"const NMT = (.*?);\n", html.read_text(encoding="utf-8")).group(1))
    tree = data["sentences"][0]["results"][0]["tree"]
    assert tree["beam_size"] == 5 and tree["finals"][0]["text"] == result.stdout.decode().strip()
    problems = []
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 900}, bypass_csp=True)
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(html.as_uri())
        nodes = page.locator("svg.beam-tree g.node").count()
        rows = page.locator("tr.final-row").count()
        browser.close()
    assert nodes == len(tree["nodes"]) and rows == len(tree["finals"]) and problems == []
