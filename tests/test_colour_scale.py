"""The one colour rule (nmt.viz.colour_scale) in the PNGs, TensorBoard's figures and the explorer:
a uniform map is never drawn bright under the default, masked cells are drawn apart, every
legend states its scale, and the page's script computes what the Python module computes."""

import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

from nmt.viz import colour_scale
from nmt.viz.heatmaps import attention_figure
from tests.helpers import ROOT
from tests.test_attention_html import DATE, attributes, launch_chromium, needs_chromium

VIRIDIS9 = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#fde725"]
YELLOW = (253, 231, 37)


def page_colour(x: float) -> tuple[int, int, int]:
    """The page's colour(x), computed here: viridis' 9 stops, interpolated."""
    stops = [tuple(int(h[i:i + 2], 16) for i in (1, 3, 5)) for h in VIRIDIS9]
    f = min(1.0, max(0.0, x)) * 8
    i = min(7, int(f))
    return tuple(round(a + (b - a) * (f - i)) for a, b in zip(stops[i], stops[i + 1]))


def rgb(fill: str) -> tuple[int, int, int]:
    return tuple(int(v) for v in fill.removeprefix("rgb(").removesuffix(")").split(","))


def cell_pixels(fig) -> np.ndarray:
    """The RGB pixels inside the map's axes, as drawn (the PNG's pixels before its crop)."""
    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())[..., :3]
    box = fig.axes[0].get_window_extent()
    height = image.shape[0]
    return image[int(height - box.y1) + 6:int(height - box.y0) - 6, int(box.x0) + 6:int(box.x1) - 6]


def test_a_uniform_map_is_dark_under_the_default_and_bright_only_when_asked():
    weights = np.full((10, 12), 1 / 12)
    src, tgt = [f"s{i}" for i in range(12)], [f"t{i}" for i in range(10)]
    default = cell_pixels(attention_figure(weights, src, tgt, "uniform"))
    expected = np.array(colour_scale_viridis(1 / 12))
    assert np.abs(default.reshape(-1, 3).astype(int) - expected).max() <= 2      # every cell: viridis(0.083)
    assert np.abs(default.reshape(-1, 3).astype(int) - YELLOW).max(1).min() > 150     # nowhere near yellow
    relative = attention_figure(weights, src, tgt, "uniform", scale="relative")
    assert np.abs(cell_pixels(relative).reshape(-1, 3).astype(int) - YELLOW).max() <= 2
    label = relative.axes[1].get_xlabel()
    assert "relative scale 0 to 0.0833, this map's largest; row entropy 3.58 bits (uniform: 3.58)" in label
    assert "absolute scale 0 to 1; row entropy 3.58 bits" in attention_figure(weights, src, tgt).axes[1].get_xlabel()


def colour_scale_viridis(x: float) -> tuple[int, int, int]:
    import matplotlib

    return tuple(round(255 * c) for c in matplotlib.colormaps["viridis"](x)[:3])


def test_masked_cells_are_grey_in_the_png_not_a_small_weight():
    weights = np.tril(np.ones((6, 6)))
    weights /= weights.sum(1, keepdims=True)
    fig = attention_figure(weights, list("abcdef"), list("abcdef"), "causal", mask="causal")
    pixels = cell_pixels(fig)
    h, w = pixels.shape[:2]
    corner = pixels[: h // 6 - 2, w - w // 6 + 2:].reshape(-1, 3).astype(int)    # row 0, column 5: masked
    spread = corner.max(1) - corner.min(1)
    assert (spread < 20).all()                         # grey (the hatching's two greys), no viridis hue
    assert "grey hatched: masked" in fig.axes[1].get_xlabel()


def test_the_scale_rule():
    w = np.array([[0.2, 0.8], [0.5, 0.5]])
    causal = colour_scale.masked_cells("causal", 2, 2)
    assert causal.tolist() == [[False, True], [False, False]]
    assert colour_scale.scale_max(w) == 1.0
    assert colour_scale.scale_max(w, "relative") == 0.8
    assert colour_scale.scale_max(w, "relative", causal) == 0.5            # the masked 0.8 is not a weight
    assert colour_scale.scale_max(w, "relative", shared=0.9) == 0.9
    assert colour_scale.scale_max(np.array([[2.5, 0.1]])) == 2.5            # coverage runs past 1
    mean, uniform = colour_scale.row_entropy(np.full((3, 4), 0.25))
    assert mean == pytest.approx(2.0) and uniform == pytest.approx(2.0)
    assert colour_scale.row_entropy(np.array([[1.0, 0.0], [0.5, 0.5]]), causal) == pytest.approx((0.5, 0.5))
    with pytest.raises(ValueError):
        colour_scale.scale_max(w, "log")


def hand_page(tmp_path, maps_per_model, name="hand.html") -> str:
    from nmt.viz.html_export import render_page

    results = [{"source": "a b c", "text": "x y", "beam_size": 1, "ranking": "nmt", "score": -1.0,
                "src_pieces": ["a", "b", "c"], "tgt_pieces": ["x", "y", "</s>"], "forced": 0, "truncated": False,
                "maps": maps} for maps in maps_per_model]
    data = {"mode": "static", "title": "hand", "models": [{"name": f"m{i}", "description": ""} for i in
                                                         range(len(results))],
            "sentences": [{"line": 1, "source": "a b c", "results": results}]}
    path = tmp_path / name
    path.write_text(render_page(data), encoding="utf-8")
    return path.as_uri()


def one_map(name, layers, rows, cols, mask=None):
    return {"name": name, "title": name, "rows": rows, "cols": cols, "row_axis": "target", "col_axis": "source",
            "center": None, "window": None, "exact_zeros": False, "mask": mask, "layers": layers}


@needs_chromium
def test_the_page_script_computes_what_the_python_rule_computes(tmp_path):
    from playwright.sync_api import sync_playwright

    rng = np.random.default_rng(0)
    cases = []
    for R, C, mask in [(3, 5, None), (4, 4, "causal"), (6, 2, None), (5, 5, "causal")]:
        w = rng.dirichlet(np.ones(C) * 0.3, size=R).round(4)
        cases.append((w, mask))
    url = hand_page(tmp_path, [[one_map("cross", [[[[0.5, 0.5, 0.0]] * 3]], ["x", "y", "</s>"], ["a", "b", "c"])]])
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(bypass_csp=True)
        page.goto(url)
        script = """([w, mask, scale, shared]) => {
            const map = {mask: mask};
            const top = scaleMax(w, scale, map, shared);
            return [top, rowEntropy(w, map), scaleLegend(scale, top, rowEntropy(w, map), shared === null ? 1 : 2)];
        }"""
        for w, mask in cases:
            masked = colour_scale.masked_cells(mask, *w.shape)
            for scale, shared in [("absolute", None), ("relative", None), ("relative", 0.97)]:
                top, entropy, said = page.evaluate(script, [w.tolist(), mask, scale, shared])
                assert top == pytest.approx(colour_scale.scale_max(w, scale, masked, shared))
                assert entropy == pytest.approx(list(colour_scale.row_entropy(w, masked)))
                assert said == colour_scale.legend(scale, top, colour_scale.row_entropy(w, masked),
                                                   1 if shared is None else 2)
        assert page.evaluate("NMT.colour") == colour_scale.page_rule()
        browser.close()


@needs_chromium
def test_compared_panels_share_one_relative_scale(tmp_path):
    from playwright.sync_api import sync_playwright

    rows, cols = ["x", "y", "</s>"], ["a", "b", "c"]
    sharp = one_map("cross", [[[[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]]]], rows, cols)
    flat = one_map("cross", [[[[0.25, 0.375, 0.375]] * 3]], rows, cols)
    problems = []
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 900}, bypass_csp=True)
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(hand_page(tmp_path, [[sharp], [flat]]))
        absolute = [float(t) for t, in attributes(page, "svg.heatmap", "data-top")]
        page.select_option("#scale", "relative")
        relative = [float(t) for t, in attributes(page, "svg.heatmap", "data-top")]
        legends = page.locator(".scale-legend").all_inner_texts()
        flat_fill = page.get_attribute(".panel:nth-child(2) svg.heatmap rect.cell[data-row='0'][data-col='1']", "fill")
        browser.close()
    assert absolute == [1.0, 1.0]
    assert relative == [0.5, 0.5]                          # one maximum: the larger panel's
    assert all("relative scale 0 to 0.5000, the largest of 2 panels" in said for said in legends)
    assert rgb(flat_fill) == page_colour(0.375 / 0.5)      # the flat panel is not stretched to its own 0.375
    assert problems == []


@pytest.fixture(scope="module")
def marian_explorer(tmp_path_factory):
    """`python -m nmt.explore --hf TINY_MARIAN`: an untrained Marian, whose attention is nearly uniform."""
    pytest.importorskip("transformers")
    from tests.hf_marian import build_tiny_marian
    from tests.test_explore import free_port

    folder = build_tiny_marian(tmp_path_factory.mktemp("marian"))
    port = free_port()
    log = tmp_path_factory.mktemp("log") / "stderr.txt"
    with open(log, "w") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "nmt.explore", "--hf", str(folder), "--port", str(port),
                                    "--device", "cpu"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"nmt.explore exited with {process.returncode}: {log.read_text()}")
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"nmt.explore did not answer: {log.read_text()}")
                time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


@needs_chromium
@pytest.mark.parametrize("width", [1280, 1920])
def test_the_explorer_draws_a_nearly_uniform_map_dark(marian_explorer, width):
    from playwright.sync_api import sync_playwright

    problems = []
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": width, "height": 1000}, bypass_csp=True)
        page.set_default_timeout(90_000)
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(marian_explorer)
        page.fill("#source", DATE)
        page.click("#go")
        page.wait_for_selector("svg.heatmap rect.cell")
        cells = attributes(page, "svg.heatmap rect.cell", "fill", "data-value")
        legend = page.inner_text(".scale-legend")
        page.select_option("#scale", "relative")
        relative = attributes(page, "svg.heatmap rect.cell", "fill", "data-value")
        relative_legend = page.inner_text(".scale-legend")
        page.select_option("#scale", "absolute")
        page.select_option(".map-select", "decoder-self")
        page.wait_for_selector("svg.heatmap[data-map='decoder-self'] rect.cell")   # fetched when shown (on_demand)
        masked = attributes(page, "svg.heatmap rect.cell", "class", "fill", "data-row", "data-col")
        thumbs = [float(t) for t, in attributes(page, "canvas.thumb", "data-top")]
        browser.close()
    values = [float(v) for _, v in cells]
    assert max(values) < 0.3                                  # the untrained model spreads its attention
    for fill, value in cells:                                 # each cell: its weight on 0 to 1
        assert rgb(fill) == page_colour(float(value))
    assert min(np.abs(np.array(rgb(f)) - YELLOW).max() for f, _ in cells) > 100      # no cell near yellow
    assert legend.startswith("absolute scale 0 to 1; row entropy")
    top = max(float(v) for _, v in relative)
    assert rgb(next(f for f, v in relative if float(v) == top)) == YELLOW             # relative: its largest is yellow
    assert relative_legend.startswith(f"relative scale 0 to {top:.4f}, this map's largest; row entropy")
    future = [(c, f) for c, f, r, k in masked if int(k) > int(r)]
    assert future and all(c == "cell masked" and f.startswith("url(#h") for c, f in future)
    assert all(c == "cell" for c, _, r, k in masked if int(k) <= int(r))
    assert thumbs and all(t == 1.0 for t in thumbs)          # the model view: absolute too
    assert problems == []


@pytest.mark.parametrize("width", [1280, 1920])
def test_two_panels_stand_side_by_side_from_1280_px(browser_page, tmp_path, width):
    rows, cols = ["x", "y", "</s>"], [f"s{i}" for i in range(40)]       # each map wider than half the window
    maps = [one_map("cross", [[[[1 / 40] * 40] * 3]], rows, cols)]
    page, _ = browser_page(hand_page(tmp_path, [maps, maps]), width=width, height=900)
    boxes = page.locator("#results .pair > .panel").evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right]; })")
    (l1, t1, r1), (l2, t2, r2) = boxes
    assert t1 == t2 and r1 <= l2 and r2 <= width          # one row, within the window
