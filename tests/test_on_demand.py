"""The explorer sends what its page shows and the rest on request (nmt.viz.on_demand)."""

import json
import urllib.request

import numpy as np
import pytest

from tests.test_attention_html import DATE
from tests.test_explore import explorer, post, transformer_checkpoint  # noqa: F401 (fixtures)


def test_a_packed_layer_reads_back_as_the_json_numbers():
    from nmt.viz.on_demand import packed, unpacked

    heads = [[[0.1285, 0.8715], [6.12e-10, 1.0]]]                        # (1, 2, 2): a tiny weight kept as it is
    back = unpacked(packed(heads))
    assert back.shape == (1, 2, 2) and back[0, 0].tolist() == [0.1285, 0.8715] and back[0, 1, 1] == 1.0
    assert back[0, 1, 0] == pytest.approx(6.12e-10, rel=1e-6)


TINY = float(np.float32(3e-5))          # a weight that rounds to 0, kept as its float32 (attention_data._rounded)
BY_HAND = [  # (heads, header [kind, H, R, C, n], the uint16 codes or None)
    ([[[0.1285, 0.8715, 0.0, TINY, 0.9999]]], [1, 1, 1, 5, 1], [1285, 8715, 0, 0, 9999]),
    ([[[0.5, -0.25]], [[1.0, 0.0]]], [2, 2, 1, 2, 0], None),           # negative (an attribution): float32
    ([[[TINY, TINY, TINY, 1.0]]], [2, 1, 1, 4, 0], None),               # 3 of 4 tiny: float32 is shorter
]


@pytest.mark.parametrize("heads, header, codes", BY_HAND)
def test_a_layer_s_bytes_by_hand(heads, header, codes):
    """A layer's bytes (nmt.viz.on_demand.layer_bytes): 1e-4 codes with the tiny weights
    after them, or float32; read back, each is the JSON number exactly (the maps are rounded
    to 1e-4, the codes' step: no further quantisation)."""
    from nmt.viz.on_demand import from_bytes, layer_bytes

    data = layer_bytes(heads)
    assert np.frombuffer(data, "<u4", 5).tolist() == header
    N = header[1] * header[2] * header[3]
    if codes is not None:
        assert np.frombuffer(data, "<u2", N, 20).tolist() == codes
        at = 20 + 2 * N + 2                                               # 5 codes: 10 bytes, padded to 12
        assert np.frombuffer(data, "<u4", 1, at).tolist() == [3] and np.frombuffer(data, "<f4", 1, at + 4)[0] == TINY
        assert len(data) == at + 8
    else:
        assert np.frombuffer(data, "<f4", N, 20).tolist() == np.asarray(heads, dtype=np.float32).ravel().tolist()
    assert from_bytes(data).tolist() == heads


def test_the_page_reads_a_layer_s_bytes_as_python_does(browser_page, tmp_path):
    """The page's fromBytes (explorer_page.html) gives the numbers of from_bytes, bit for bit,
    for both kinds, and a row of it is a view of one Float64Array."""
    from nmt.viz.on_demand import layer_bytes
    from tests.test_colour_scale import hand_page, one_map

    page, problems = browser_page(hand_page(tmp_path, [[one_map("cross", [[[[0.5, 0.5]]]], ["x"], ["a", "b"])]]))
    rng = np.random.default_rng(0)
    weights = np.round(rng.dirichlet(np.ones(7), size=(3, 5)), 4)       # (3 heads, 5 rows, 7 columns)
    weights[0, 0, 0] = TINY
    for heads in [weights.tolist()] + [h for h, _, _ in BY_HAND]:
        read = page.evaluate("bytes => { const heads = fromBytes(Uint8Array.from(bytes).buffer); "
                             "return [heads.map(h => h.map(row => Array.from(row))), heads[0][0].constructor.name]; }",
                             list(layer_bytes(heads)))
        assert read == [heads, "Float64Array"]
    assert problems == []


def test_thumbnails_are_block_maxima_by_hand(monkeypatch):
    from nmt.viz import on_demand

    monkeypatch.setattr(on_demand, "THUMB", 2)
    layers = np.arange(1, 25, dtype=float).reshape(1, 1, 4, 6) / 100      # (1, 1, 4, 6)
    # 4 x 6 cells into at most 2 x 2: blocks of 2 rows x 3 columns, each its largest weight
    assert on_demand.thumbnails(layers, None) == [[[[0.09, 0.12], [0.21, 0.24]]]]
    causal = np.full((1, 1, 4, 4), 0.5)
    # a causal 4 x 4: the top right block (rows 0-1, columns 2-3) is all masked -> None
    assert on_demand.thumbnails(causal, "causal") == [[[[0.5, None], [0.5, 0.5]]]]
    small = np.array([[[[0.25, 0.75]]]])
    assert on_demand.thumbnails(small, None) == [[[[0.25, 0.75]]]]          # small maps as they are


def test_a_reply_carries_the_last_layer_and_the_rest_comes_on_request(explorer, transformer_checkpoint):  # noqa: F811
    from nmt.translator import Translator
    from nmt.viz.attention_data import translate_and_explain
    from nmt.viz.on_demand import from_bytes, unpacked

    full = translate_and_explain(Translator.from_checkpoint(transformer_checkpoint, device="cpu"), DATE, 1)
    status, reply = post(explorer, json.dumps({"text": DATE}).encode())
    assert status == 200
    sent = reply["results"][1]                                            # the Transformer, 2 layers
    first = sent["maps"][0]
    assert first["layers"][0] is None and unpacked(first["layers"][1]).tolist() == full["maps"][0]["layers"][1]
    for got, whole in zip(sent["maps"], full["maps"]):
        assert (got["n_layers"], got["n_heads"]) == (2, 2)
        assert np.array(got["thumbs"], dtype=float).shape == np.array(whole["layers"]).shape   # small: as they are
    assert all(m["layers"] == [None, None] for m in sent["maps"][1:])   # maps not shown yet: on request
    status, layer = post(explorer, json.dumps({"id": sent["id"], "map": "decoder-self", "layer": 0}).encode(),
                         "/api/maps")
    assert status == 200 and unpacked(layer["heads"]).tolist() == full["maps"][2]["layers"][0]
    asked = urllib.request.Request(explorer + "api/maps", data=json.dumps({"id": sent["id"], "map": "cross",
                                                                           "layer": 0}).encode(),
                                   headers={"Content-Type": "application/json", "Accept": "application/octet-stream"})
    with urllib.request.urlopen(asked, timeout=60) as answer:            # the page's way: the bytes themselves
        assert answer.headers["Content-Type"] == "application/octet-stream"
        assert from_bytes(answer.read()).tolist() == full["maps"][0]["layers"][0]
    for body, said in (({"id": sent["id"], "map": "cross", "layer": 2}, "layer must be a whole number from 0 to 1"),
                       ({"id": sent["id"], "map": "nope", "layer": 0}, "map must be one of"),
                       ({"id": "999999", "map": "cross", "layer": 0}, "that translation is no longer kept")):
        status, answer = post(explorer, json.dumps(body).encode(), "/api/maps")
        assert status == 400 and answer["error"].startswith(said)


@pytest.mark.parametrize("width", [1280])
def test_another_layer_is_fetched_and_drawn(browser_page, explorer, transformer_checkpoint, width):  # noqa: F811
    from nmt.translator import Translator
    from nmt.viz.attention_data import translate_and_explain

    full = translate_and_explain(Translator.from_checkpoint(transformer_checkpoint, device="cpu"), DATE, 1)
    page, problems = browser_page(explorer, width=width)
    page.fill("#source", DATE)
    page.click("#go")
    page.wait_for_function(f"document.getElementById('results').dataset.source === {DATE!r}")
    panel = page.locator(".panel").nth(1)
    panel.locator(".layer-select").select_option("1")
    panel.locator(".head-select").select_option("2")
    panel.locator("svg.heatmap rect.cell[data-row='1'][data-col='2']").wait_for()
    value = float(panel.locator("svg.heatmap rect.cell[data-row='1'][data-col='2']").get_attribute("data-value"))
    assert value == full["maps"][0]["layers"][0][1][1][2]
    assert problems == []


def test_the_layer_next_to_the_one_shown_is_asked_for_before_it_is_chosen(browser_page, explorer):  # noqa: F811
    """After a draw the page asks for the layers next to the one shown (the Transformer's layer 1
    beside its last, 2; the GRU has one layer): choosing it then sends no request."""
    page, problems = browser_page(explorer, width=1280)
    asked = []
    with page.expect_response(lambda r: r.url.endswith("/api/maps")):    # the first view's example, its layer 1
        page.wait_for_function("document.getElementById('results').dataset.source")
    page.on("request", lambda r: asked.append(json.loads(r.post_data)) if r.url.endswith("/api/maps") else None)
    page.fill("#source", DATE)
    with page.expect_response(lambda r: r.url.endswith("/api/maps")) as answer:
        page.click("#go")
    assert answer.value.headers["content-type"] == "application/octet-stream"
    assert [(a["map"], a["layer"]) for a in asked] == [("cross", 0)]
    panel = page.locator(".panel").nth(1)
    panel.locator(".layer-select").select_option("1")
    panel.locator("svg.heatmap[data-layer='1']").wait_for()
    page.wait_for_timeout(300)                                           # its own draw's neighbours: layer 2, held
    assert len(asked) == 1 and problems == []


def test_alternatives_come_only_when_asked_for(explorer, transformer_checkpoint):  # noqa: F811
    """A translation carries no top-k alternatives; POST /api/alternatives {id, k} computes them
    on the model that wrote that result (here the second, the Transformer), as nmt.explain does."""
    from nmt.explain import alternatives
    from nmt.translator import Translator

    status, reply = post(explorer, json.dumps({"text": DATE}).encode())
    assert status == 200 and all("alternatives" not in r for r in reply["results"])
    assert all("alternatives" not in m for r in reply["results"] for m in r["maps"])
    sent = reply["results"][1]
    status, answer = post(explorer, json.dumps({"id": sent["id"], "k": 3}).encode(), "/api/alternatives")
    assert status == 200
    rows = alternatives(Translator.from_checkpoint(transformer_checkpoint, device="cpu"), DATE, sent["tokens"], 3)
    assert [a["chosen"] for a in answer["alternatives"]] == sent["tgt_pieces"]           # one per row, </s> too
    assert [a["p"] for a in answer["alternatives"]] == [[round(p, 4) for p in r["p"]] for r in rows]
    assert [a["chosen_rank"] for a in answer["alternatives"]] == [r["chosen_rank"] for r in rows]
    first = answer["alternatives"][0]
    assert answer["tips"][0] == (f"chosen p={first['chosen_p']:.4g} (rank {first['chosen_rank']}); top: "
                                 + ", ".join(f"{w} {p:.4g}" for w, p in zip(first["pieces"], first["p"])))
    for body, said in (({"id": sent["id"], "k": 0}, "k must be a whole number from 1 to 50"),
                       ({"id": sent["id"], "k": True}, "k must be a whole number from 1 to 50"),
                       ({"id": "999999"}, "that translation is no longer kept"),
                       ([1, 2], "send a JSON object {id, k}")):
        status, answer = post(explorer, json.dumps(body).encode(), "/api/alternatives")
        assert status == 400 and answer["error"].startswith(said)


def test_the_page_asks_for_alternatives_when_its_button_is_pressed(browser_page, explorer):  # noqa: F811
    page, problems = browser_page(explorer, width=1280)
    asked = []
    page.on("request", lambda r: asked.append((r.url.rsplit("/", 1)[-1], r.post_data)) if r.method == "POST" else None)
    page.fill("#source", DATE)
    page.click("#go")
    page.wait_for_function(f"document.getElementById('results').dataset.source === {DATE!r}")
    translate = [json.loads(body) for path, body in asked if path == "translate"]
    assert translate and all("top_k" not in body for body in translate)
    panel = page.locator(".panel").nth(1)
    panel.locator("svg.heatmap rect.cell").first.hover()
    assert "chosen p=" not in page.locator("#tooltip").inner_text()
    panel.locator("button.alternatives-button").click()
    page.wait_for_function("document.querySelectorAll('.panel')[1].querySelector('button.alternatives-button')"
                           ".textContent.endsWith('hover a cell')")
    assert [path for path, _ in asked].count("alternatives") == 1
    panel.locator("svg.heatmap rect.cell").nth(1).hover()
    tip = page.locator("#tooltip").inner_text()
    assert "chosen p=" in tip and tip.count(", ") == 4                   # the step's 5 most probable subwords
    assert problems == []


def test_a_large_map_changes_layer_in_place(browser_page, tmp_path):
    """A map over CELL_BUDGET cells (70 x 70) drawn at another layer keeps its svg and labels
    (only the picture, the scale's numbers and the lines change), and paints what a fresh draw
    paints: layer 1 is the identity (1 on the diagonal, both heads), layer 2 uniform (1/70)."""
    from tests.test_colour_scale import hand_page, one_map

    n = 70
    identity = np.eye(n).tolist()
    uniform = np.full((n, n), 1 / n).tolist()
    pieces = [f"p{i}" for i in range(n)]
    page, problems = browser_page(hand_page(tmp_path, [[one_map("cross", [[identity, identity], [uniform, uniform]],
                                                                 pieces, pieces)]]), width=1280)
    heatmap, heads = page.locator("svg.heatmap"), page.locator("svg.head-view")
    assert heatmap.get_attribute("data-layer") == "2" and heads.locator("line").count() == 0    # 1/70 < 0.05
    page.evaluate("document.querySelector('svg.heatmap').nmtTag = document.querySelector('svg.head-view').nmtTag = 7")
    texts = heatmap.locator("text").count()
    page.locator(".layer-select").select_option("1")
    assert heatmap.get_attribute("data-layer") == "1"
    assert page.evaluate("[document.querySelector('svg.heatmap').nmtTag, document.querySelector('svg.head-view').nmtTag]"
                         ) == [7, 7]                                        # the same elements, not drawn anew
    assert heatmap.locator("text").count() == texts and heads.get_attribute("data-layer") == "1"
    assert heads.locator("line").count() == 2 * n                           # the diagonal, each head: weight 1
    assert "layer 1:" in page.locator("p.head-legend").inner_text()
    box = heatmap.locator("rect.cells-overlay").bounding_box()
    cell = box["width"] / n
    for (r, c), weight in (((3, 3), "1.0000"), ((3, 4), "0 (below")):
        page.mouse.move(box["x"] + (c + 0.5) * cell, box["y"] + (r + 0.5) * cell)
        assert page.locator("#tooltip").inner_text().split("\n")[2].startswith(f"weight {weight}")
    repainted = heatmap.locator("image.cells-image").get_attribute("href")
    page.locator("#scale").select_option("relative")                         # the scale's numbers follow
    assert page.locator("p.scale-legend").inner_text().startswith("relative scale 0 to 1")
    page.locator("#label-mode").select_option("pieces")                     # other labels: drawn anew
    assert page.evaluate("document.querySelector('svg.heatmap').nmtTag") is None
    assert heatmap.locator("image.cells-image").get_attribute("href") == repainted
    assert problems == []
