"""Attention data for the explorer and `nmt.translate --attention-html`."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from nmt.core.transformer_decoder import TransformerDecoder
from nmt.core.transformer_encoder import TransformerEncoder
from nmt.core.outputs import Memory
from tests.helpers import train

CHROMIUM = "/usr/bin/chromium"
DATE = "monday the twenty first of march nineteen eighty four"
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]
# data=toy, not experiment=quickstart: its RNN sizes (embed_dim, ...) do not fit a Transformer
TRANSFORMER = ("data=toy", "model/encoder=transformer", "model/decoder=transformer",
               "model/bridge=zero", "model/positional=sinusoidal", "model.encoder.d_model=32",
               "model.encoder.layers=2", "model.encoder.heads=2", "model.encoder.ff_size=64",
               "model.decoder.d_model=32", "model.decoder.layers=2", "model.decoder.heads=2",
               "model.decoder.ff_size=64", "trainer.max_steps=30", "trainer.val_every=30",
               "trainer.val_max_sentences=20", "trainer.heatmap_sentences=1")
_trained = {}


def tiny_transformer(tmp_path_factory, cache_dir) -> Path:
    """A 2-layer, 2-head Transformer on the toy task, trained once per session."""
    if "transformer" not in _trained:
        run_dir = tmp_path_factory.mktemp("tiny_transformer")
        train(run_dir, *TRANSFORMER, cache_dir=cache_dir)
        _trained["transformer"] = run_dir / "checkpoints" / "best.pt"
    return _trained["transformer"]


def launch_chromium(playwright):
    """Debian's Chromium, headless; never a downloaded browser."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)


def attributes(page, selector: str, *names: str) -> list[list]:
    """The attributes `names` of every element `selector` finds, in one round trip to the
    browser (a locator per element costs one round trip per attribute)."""
    return page.locator(selector).evaluate_all("(els, names) => els.map(e => names.map(n => e.getAttribute(n)))",
                                               list(names))


needs_chromium = pytest.mark.skipif(shutil.which(CHROMIUM) is None,
                                    reason=f"{CHROMIUM} is not installed (apt-get install chromium)")


@pytest.fixture(scope="module")
def transformer_checkpoint(tmp_path_factory, cache_dir):
    return tiny_transformer(tmp_path_factory, cache_dir)


def test_self_weights_change_nothing_and_are_causal():
    torch.manual_seed(0)
    enc = TransformerEncoder(11, d_model=8, layers=2, heads=2, ff_size=16, dropout=0.0).eval()
    dec = TransformerDecoder(13, 8, d_model=8, layers=2, heads=2, ff_size=16, dropout=0.0).eval()
    src = torch.tensor([[4, 5, 6, 0]])                     # (1, 4), one pad
    mask = (src != 0)[:, None]                             # (1, 1, 4)
    tgt = torch.tensor([[2, 7, 8]])                        # (1, 3)
    plain = enc(src, mask)
    collected = []
    out = enc(src, mask, self_weights=collected)
    assert torch.allclose(plain.memory, out.memory, atol=1e-6)
    assert len(collected) == 2 and collected[0].shape == (1, 2, 4, 4)
    assert torch.allclose(collected[0].sum(-1), torch.ones(1, 2, 4), atol=1e-5)
    assert collected[1][..., 3].abs().max() == 0             # the pad key gets nothing

    memory = Memory(out.memory, mask)
    ref = dec(tgt, None, memory, need_weights=True)
    dec_self = []
    got = dec(tgt, None, memory, need_weights=True, self_weights=dec_self)
    assert torch.allclose(ref.logits, got.logits, atol=1e-6)
    assert torch.allclose(ref.layers, got.layers, atol=1e-6)
    w = dec_self[1][0]                                     # (H, T, T)
    assert torch.all(torch.triu(w, diagonal=1) == 0)       # no query sees a later token
    assert torch.allclose(w[:, 0, 0], torch.ones(2))       # the first sees only itself


def test_transformer_maps_cover_every_layer_and_head(transformer_checkpoint):
    from nmt.translator import Translator
    from nmt.viz.attention_data import translate_and_explain

    translator = Translator.from_checkpoint(transformer_checkpoint, device="cpu")
    out = translator.translate([DATE], beam_size=2)[0]
    data = translate_and_explain(translator, DATE, beam_size=2)
    assert data["text"] == out.text and data["tgt_pieces"] == out.tgt_pieces
    maps = {m["name"]: m for m in data["maps"]}
    assert list(maps) == ["cross", "encoder-self", "decoder-self"]
    S, T = len(out.src_pieces), len(out.tgt_pieces)
    cross = np.array(maps["cross"]["layers"])
    assert cross.shape == (2, 2, T, S)
    assert np.allclose(cross.sum(-1), 1, atol=1e-3)
    # the search's own heatmap is the mean over heads of the last layer
    assert np.allclose(cross[-1].mean(0), out.attention, atol=1e-3)
    assert np.array(maps["encoder-self"]["layers"]).shape == (2, 2, S, S)
    dec_self = np.array(maps["decoder-self"]["layers"])
    assert dec_self.shape == (2, 2, T, T)
    assert maps["decoder-self"]["rows"] == ["<s>"] + out.tgt_pieces[:-1]
    assert np.all(np.triu(dec_self, k=1) == 0)


def test_rnn_map_is_the_search_attention(toy_checkpoint):
    from nmt.translator import Translator
    from nmt.viz.attention_data import translate_and_explain

    translator = Translator.from_checkpoint(toy_checkpoint, device="cpu")
    out = translator.translate([DATE])[0]
    data = translate_and_explain(translator, f"  {DATE} ")
    assert [m["name"] for m in data["maps"]] == ["cross"]
    weights = np.array(data["maps"][0]["layers"])
    assert weights.shape == (1, 1, len(out.tgt_pieces), len(out.src_pieces))
    assert np.allclose(weights[0, 0], out.attention, atol=1e-3)


def test_lstmn_intra_attention_is_a_map_over_its_tape(tmp_path, cache_dir):
    from nmt.translator import Translator
    from nmt.viz.attention_data import translate_and_explain

    train(tmp_path, "experiment=quickstart", "model/encoder=lstmn", "trainer.max_steps=2",
          "trainer.val_every=2", "trainer.val_max_sentences=2", "trainer.heatmap_sentences=0",
          cache_dir=cache_dir)
    translator = Translator.from_checkpoint(tmp_path / "checkpoints" / "last.pt", device="cpu")
    data = translate_and_explain(translator, DATE)
    intra = {m["name"]: m for m in data["maps"]}["encoder-self"]
    S = len(data["src_pieces"])
    assert intra["rows"] == data["src_pieces"] and intra["cols"] == ["<start>"] + data["src_pieces"][:-1]
    weights = np.array(intra["layers"])[0, 0]                          # (S, S)
    assert weights.shape == (S, S)
    assert np.allclose(weights.sum(-1), 1.0, atol=1e-3)                # each row a distribution
    assert np.all(np.triu(weights, k=1) == 0)                          # only slots before the token
    assert weights[0, 0] == 1.0                                        # the first token sees the start slot


def test_bad_sentences_are_one_line_errors(toy_checkpoint):
    from nmt.base.errors import NmtError
    from nmt.translator import Translator
    from nmt.viz.attention_data import check_source

    translator = Translator.from_checkpoint(toy_checkpoint, device="cpu")
    with pytest.raises(NmtError, match="empty"):
        check_source(translator, "   ")
    with pytest.raises(NmtError, match=f"at most {translator.max_src_len}; shorten it"):
        check_source(translator, " ".join(["march"] * (translator.max_src_len + 5)))


def test_translate_writes_one_offline_file(toy_checkpoint, tmp_path):
    from nmt.commands.translate import main

    source = tmp_path / "in.txt"
    source.write_text(f"{DATE}\n\nthe third of may </script><b>\n", encoding="utf-8")
    html = tmp_path / "attention.html"
    assert main(["--checkpoint", str(toy_checkpoint), "--input", str(source), "--output",
                 str(tmp_path / "out.txt"), "--beam-size", "2", "--attention-html", str(html)]) == 0
    page = html.read_text(encoding="utf-8")
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"(https?:)?//", page)  # no CDN
    assert page.count("</script>") == 1                   # the input cannot close the script
    data = json.loads(re.search(r"const NMT = (.*?);\n", page).group(1))
    assert data["mode"] == "static"
    assert [s["line"] for s in data["sentences"]] == [1, 3]     # the empty line is skipped
    assert data["sentences"][1]["source"] == "the third of may </script><b>"
    # the page says what the score is: a beam's length-normalised score here
    assert {r["beam_size"] for s in data["sentences"] for r in s["results"]} == {2}


def test_unwritable_html_is_one_line(toy_checkpoint, tmp_path, capsys):
    from nmt.commands.translate import main

    source = tmp_path / "in.txt"
    source.write_text(f"{DATE}\n", encoding="utf-8")
    code = main(["--checkpoint", str(toy_checkpoint), "--input", str(source), "--output",
                 str(tmp_path / "out.txt"), "--attention-html", str(tmp_path / "no" / "a.html")])
    err = capsys.readouterr().err
    # said before any work: the folder does not exist
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("nmt: error: --attention-html ") and err.rstrip().endswith("does not exist; create it first")
    assert not (tmp_path / "out.txt").exists()


@needs_chromium
def test_offline_file_works_in_a_browser(transformer_checkpoint, tmp_path):
    from playwright.sync_api import sync_playwright

    from nmt.commands.translate import main

    source = tmp_path / "in.txt"
    source.write_text(f"{DATE}\nthe third of may two thousand\n", encoding="utf-8")
    html = tmp_path / "attention.html"
    assert main(["--checkpoint", str(transformer_checkpoint), "--input", str(source), "--output",
                 str(tmp_path / "out.txt"), "--attention-html", str(html)]) == 0
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page()
        problems, requests = [], []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(html.as_uri())
        form_visible = page.is_visible("#form")          # no server behind the offline page
        page.select_option("#sentence", value="1")
        page.select_option(".map-select", "decoder-self")
        page.select_option(".head-select", "2")
        page.hover("svg.heatmap rect.cell[data-row='0'][data-col='0']")
        tip = page.inner_text("#tooltip")
        browser.close()
    assert tip.startswith("query (decoder input) \u201c<s>\u201d") and tip.endswith("weight 1.0000")
    assert problems == [] and requests == [html.as_uri()]
    assert not form_visible


def test_rounding_never_turns_a_weight_into_zero():
    from nmt.viz.attention_data import _rounded

    # 4 decimals: 0.123456 -> 0.1235; 3e-5 would round to 0.0, which the page draws
    # white as an exact zero, so it is kept as it is; an exact 0 stays 0
    values = _rounded([[0.0, 3e-5, 0.123456]])
    assert values[0][0] == 0.0 and values[0][2] == 0.1235
    assert values[0][1] == pytest.approx(3e-5, rel=1e-6)


# one sentence, two maps drawn by hand: a sparsemax-like row with an exact 0 and
# a tiny weight, and a coverage map (value_name "coverage") whose first row is c_1 = 0
HAND_PAGE = {
    "mode": "static", "title": "nmt attention",
    "models": [{"name": "hand", "description": "by hand"}],
    "sentences": [{"line": 1, "source": "a b c", "results": [{
        "source": "a b c", "text": "x", "score": -1.0, "src_pieces": ["a", "b", "c"],
        "tgt_pieces": ["x", "</s>"], "truncated": False,
        "maps": [
            {"name": "cross", "title": "attention", "rows": ["x", "</s>"], "cols": ["a", "b", "c"],
             "row_axis": "target", "col_axis": "source", "center": None, "window": None,
             "exact_zeros": True, "layers": [[[[0.0, 3e-5, 0.99997], [0.5, 0.5, 0.0]]]]},
            {"name": "coverage", "title": "coverage c_t", "rows": ["x", "</s>"],
             "cols": ["a", "b", "c"], "row_axis": "target", "col_axis": "source", "center": None,
             "window": None, "value_name": "coverage", "legend": "row t: c_t", "exact_zeros": True,
             "layers": [[[[0.0, 0.0, 0.0], [0.0, 3e-5, 0.99997]]]]},
        ]}]}],
}


@needs_chromium
def test_exact_zeros_are_white_and_small_weights_are_not(tmp_path):
    from playwright.sync_api import sync_playwright

    from nmt.viz.html_export import render_page

    html = tmp_path / "hand.html"
    html.write_text(render_page(HAND_PAGE), encoding="utf-8")

    def cells(page):   # (row, col) -> (fill, data-weight)
        return {(int(row), int(col)): (fill, weight) for row, col, fill, weight in
                attributes(page, "svg.heatmap rect.cell", "data-row", "data-col", "fill", "data-weight")}

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page()
        page.goto(html.as_uri())
        cross, cross_label = cells(page), page.text_content("svg.heatmap text.scale-label")
        page.hover("svg.heatmap rect.cell[data-row='0'][data-col='0']")
        tip_zero = page.inner_text("#tooltip")
        page.select_option(".map-select", "coverage")
        coverage, coverage_label = cells(page), page.text_content("svg.heatmap text.scale-label")
        page.hover("svg.heatmap rect.cell[data-row='1'][data-col='1']")
        tip_tiny = page.inner_text("#tooltip")
        browser.close()
    white, darkest = "#ffffff", "rgb(68,1,84)"      # viridis at 0: #440154
    # exact zeros (weight 0 of a sparse normaliser, a masked cell, c_1 = 0) are white
    assert cross[0, 0] == (white, "0 (exactly)") and cross[1, 2][0] == white
    assert all(coverage[0, c][0] == white for c in range(3))
    # 3e-5 is not 0: viridis' darkest colour (3e-5 of the way up), and its value is said
    assert cross[0, 1] == (darkest, "3.00e-5") and coverage[1, 1][0] == darkest
    assert cross[0, 2][0] not in (white, darkest)
    assert tip_zero.endswith("weight 0 (exactly)") and tip_tiny.endswith("coverage 3.00e-5")
    assert cross_label == "attention weight (white: exactly 0)"
    assert coverage_label == "coverage (white: exactly 0)"


@needs_chromium
def test_a_softmax_zero_is_the_lowest_colour_not_white(tmp_path):
    """The same map from a softmax (exact_zeros false): its 0 is float32
    underflow, drawn as viridis' darkest colour and said so, never white."""
    import copy

    from playwright.sync_api import sync_playwright

    from nmt.viz.html_export import render_page

    data = copy.deepcopy(HAND_PAGE)
    data["sentences"][0]["results"][0]["maps"][0]["exact_zeros"] = False
    html = tmp_path / "softmax.html"
    html.write_text(render_page(data), encoding="utf-8")
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page()
        page.goto(html.as_uri())
        zero = page.locator("svg.heatmap rect.cell[data-row='0'][data-col='0']")
        fill, said = zero.get_attribute("fill"), zero.get_attribute("data-weight")
        label = page.text_content("svg.heatmap text.scale-label")
        fills = [fill for fill, in attributes(page, "svg.heatmap rect.cell", "fill")]
        browser.close()
    assert fill == "rgb(68,1,84)" and "#ffffff" not in fills
    assert said.startswith("0 (below float32") and label == "attention weight"
