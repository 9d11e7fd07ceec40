"""Hugging Face encoder-decoders (--hf): a tiny Marian model built offline, opened by path."""

import json
import re

import numpy as np
import pytest

from tests.helpers import run_cli
from tests.test_attention_html import DATE, needs_chromium

transformers = pytest.importorskip("transformers", reason="the hf extra is not installed (pip install 'nmt[hf]')")


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    from tests.hf_marian import build_tiny_marian

    return build_tiny_marian(tmp_path_factory.mktemp("marian"))


@pytest.fixture(scope="module")
def hf_translator(marian):
    from nmt.hf.translator import HFTranslator

    return HFTranslator(str(marian), device="cpu")


@pytest.mark.parametrize("beam", [1, 3])
def test_translation_equals_generate(hf_translator, marian, beam):
    model = transformers.MarianMTModel.from_pretrained(marian).eval()
    tokenizer = transformers.MarianTokenizer.from_pretrained(marian)
    enc = tokenizer([DATE], return_tensors="pt")
    S = enc["input_ids"].shape[1]
    expected = model.generate(**enc, num_beams=beam, do_sample=False, max_new_tokens=int(S * 1.5) + 10,
                              num_return_sequences=beam)
    out = hf_translator.translate([DATE], beam_size=beam, nbest=beam)[0]
    assert [text for text, _ in out.nbest] == tokenizer.batch_decode(expected, skip_special_tokens=True)
    assert out.text == out.nbest[0][0]


def test_cross_attention_maps_equal_output_attentions(hf_translator, marian):
    import torch

    from nmt.viz.attention_data import translate_and_explain

    data = translate_and_explain(hf_translator, DATE, 2)
    maps = {m["name"]: np.array(m["layers"]) for m in data["maps"]}
    model = transformers.MarianMTModel.from_pretrained(marian, attn_implementation="eager").eval()
    tokenizer = transformers.MarianTokenizer.from_pretrained(marian)
    enc = tokenizer([DATE], return_tensors="pt")
    out = hf_translator.translate([DATE], beam_size=2)[0]
    with torch.no_grad():
        forward = model(**enc, decoder_input_ids=torch.tensor([[0] + out.tokens]), output_attentions=True)
    cross = torch.stack(forward.cross_attentions, 1)[0].numpy()           # (L, H, T, S)
    assert maps["cross"].shape == cross.shape == (2, 2, len(out.tgt_pieces), len(out.src_pieces))
    assert np.allclose(maps["cross"], cross, atol=1e-4)
    assert maps["encoder-self"].shape == (2, 2, len(out.src_pieces), len(out.src_pieces))
    assert np.allclose(maps["decoder-self"], torch.stack(forward.decoder_attentions, 1)[0].numpy(), atol=1e-4)
    assert data["src_pieces"] == tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())


def test_translate_cli_with_hf(marian, tmp_path):
    html, plots = tmp_path / "a.html", tmp_path / "plots"
    result = run_cli("nmt.translate", "--hf", str(marian), "--beam-size", "2", "--nbest", "2",
                     "--attention-html", str(html), "--plot-attention", str(plots), input=f"{DATE}\n".encode())
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 2 and all(re.fullmatch(r"0 \|\|\| .* \|\|\| -?\d+\.\d{4}", line) for line in lines)
    data = json.loads(re.search(r"const NMT = (.*?);\n", html.read_text()).group(1))
    assert [m["name"] for m in data["sentences"][0]["results"][0]["maps"]] == ["cross", "encoder-self", "decoder-self"]
    # 25 source subwords: one figure (--plot-columns would split it)
    assert sorted(p.name for p in plots.iterdir()) == ["00001.png"]


@pytest.mark.parametrize("make, message", [
    (lambda d: d, "is not a Hugging Face model folder (no config.json in it)"),
    (lambda d: (d / "config.json").write_text(json.dumps({"model_type": "bert"})) and d,
     "is a bert model, not an encoder-decoder"),
    (lambda d: (d / "config.json").write_text(json.dumps({"model_type": "electra"})) and d,
     "is an electra model, not an encoder-decoder"),          # not "a electra" (issue 58's message nits)
])
def test_bad_models_are_one_line(tmp_path, make, message):
    folder = tmp_path / "model"
    folder.mkdir()
    make(folder)
    result = run_cli("nmt.translate", "--hf", str(folder), input=f"{DATE}\n".encode())
    err = result.stderr.decode()
    assert result.returncode == 1 and err.startswith("nmt: error: --hf ") and err.count("\n") == 1, err
    assert message in err


def test_hf_and_checkpoint_are_one_or_the_other(tmp_path):
    result = run_cli("nmt.translate", input=b"x\n")
    assert result.returncode == 1 and "--checkpoint PATH (nmt), --model NAME" in result.stderr.decode()
    assert "or --hf NAME_OR_FOLDER (Hugging Face), one of the three" in result.stderr.decode()


def test_the_explorer_shows_an_hf_model_beside_an_nmt_one(marian, toy_checkpoint):
    from fastapi.testclient import TestClient

    from nmt.commands.explore import HFModel, Model, create_app

    app = create_app([Model(str(toy_checkpoint), "cpu"), HFModel(str(marian), "cpu")])
    reply = TestClient(app, base_url="http://127.0.0.1:8000").post("/api/translate", json={"text": DATE, "beam_size": 2, "prefix": "e"}).json()
    nmt_result, hf_result = reply["results"]
    assert [m["name"] for m in hf_result["maps"]] == ["cross", "encoder-self", "decoder-self"]
    assert "tree" in nmt_result and hf_result["tree"]["ranking"] == "generate" and "tree_note" not in hf_result
    what_if = reply["forced"][1]
    assert [n["piece"] for n in what_if["tree"]["nodes"] if n["state"] == "forced"] == \
        what_if["tgt_pieces"][:what_if["forced"]]
    assert reply["forced"][1]["text"].startswith("e") and reply["forced"][1]["forced"] >= 1


def test_explore_refuses_a_folder_that_is_not_a_model(tmp_path):
    from tests.test_explore import free_port

    result = run_cli("nmt.explore", "--hf", str(tmp_path), "--compare", str(tmp_path / "missing.pt"),
                     "--port", str(free_port()))
    assert result.returncode == 1 and result.stderr.decode().count("\n") == 1
    assert result.stderr.decode().startswith(f"nmt: error: checkpoint {tmp_path / 'missing.pt'} does not exist")
    result = run_cli("nmt.explore", "--hf", str(tmp_path), "--port", str(free_port()))
    assert result.returncode == 1 and result.stderr.decode() == (
        f"nmt: error: --hf {tmp_path} is not a Hugging Face model folder (no config.json in it); give a folder "
        "written by save_pretrained, or a hub name such as Helsinki-NLP/opus-mt-de-en\n")


# -- the beam tree of generate()'s own search (nmt.hf.beam_tree) ------------------------------------


def tree_checks(tree: dict, beam: int) -> None:
    """What every tree must hold: each node's log P(prefix) is its parent's plus
    log P(token); at most `beam` hypotheses run on from a step; each final's
    score is its log P / |Y|^alpha and its text the path's subwords."""
    nodes = {n["id"]: n for n in tree["nodes"]}
    for n in tree["nodes"]:
        if n["parent"] is not None:
            parent = nodes[n["parent"]]
            assert n["step"] == parent["step"] + 1 and parent["state"] in ("root", "forced", "kept")
            assert n["score"] == pytest.approx(parent["score"] + n["logp"], abs=2e-4)
    steps = {n["step"] for n in tree["nodes"]}
    assert all(sum(n["step"] == s and n["state"] == "kept" for n in tree["nodes"]) <= beam for s in steps)
    for f in tree["finals"]:
        assert f["length_penalty"] == pytest.approx(f["length"] ** tree["alpha"])
        assert f["score"] == pytest.approx(f["log_prob"] / f["length_penalty"], abs=1e-4)
        assert nodes[f["node"]]["state"] == "finished"


@pytest.mark.parametrize("beam, prefix", [(3, None), (4, "e")])
def test_the_hf_beam_tree_finals_equal_nbest(hf_translator, beam, prefix):
    from nmt.viz.search_tree import beam_tree

    out, tree = beam_tree(hf_translator, DATE, beam, prefix=prefix)
    nbest = hf_translator.translate([DATE], beam_size=beam, nbest=beam, prefix=prefix)[0].nbest
    assert [(f["text"], round(f["score"], 4)) for f in tree["finals"]] == [(t, round(s, 4)) for t, s in nbest]
    assert [f["rank"] for f in tree["finals"]] == list(range(1, beam + 1)) and out.text == nbest[0][0]
    assert tree["ranking"] == "generate" and tree["beta"] == 0.0
    states = [n["state"] for n in tree["nodes"]]
    assert {"root", "kept", "pruned", "finished"} <= set(states)
    assert states.count("forced") == (out.forced if prefix else 0)
    tree_checks(tree, beam)
    # the finals' attention rows are those of the teacher-forced maps of the best output
    path, node = [], {n["id"]: n for n in tree["nodes"]}[tree["finals"][0]["node"]]
    while node["parent"] is not None:
        path.insert(0, node["attention"])
        node = {n["id"]: n for n in tree["nodes"]}[node["parent"]]
    assert np.allclose(np.array(path), out.attention, atol=2e-3)


def test_a_replay_that_differs_from_generate_is_one_error(hf_translator, monkeypatch):
    """A transformers release that ranks otherwise is an NmtError, not a wrong tree."""
    import nmt.hf.beam_tree as replay
    from nmt.base.errors import NmtError
    from nmt.viz.search_tree import beam_tree

    built = replay.build_tree

    def shifted(name, log, out, *args):
        out.sequences_scores = out.sequences_scores + 0.5
        return built(name, log, out, *args)

    monkeypatch.setattr(replay, "build_tree", shifted)
    with pytest.raises(NmtError, match="does not match its generate"):
        beam_tree(hf_translator, DATE, 3)


def test_translate_hf_beam_tree_cli(marian, tmp_path):
    tree_file = tmp_path / "tree.json"
    nbest = run_cli("nmt.translate", "--hf", str(marian), "--beam-size", "3", "--nbest", "3",
                    input=f"{DATE}\n".encode())
    result = run_cli("nmt.translate", "--hf", str(marian), "--beam-size", "3", "--beam-tree", str(tree_file),
                     input=f"{DATE}\n".encode())
    assert nbest.returncode == 0 and result.returncode == 0, result.stderr.decode()
    tree = json.loads(tree_file.read_text())
    expected = [tuple(line.split(" ||| ")[1:]) for line in nbest.stdout.decode().splitlines()]
    assert [(f["text"], f"{f['score']:.4f}") for f in tree["finals"]] == expected
    tree_checks(tree, 3)
    bad = run_cli("nmt.translate", "--hf", str(marian), "--beam-size", "3", "--coverage-penalty", "0.2",
                  "--beam-tree", str(tmp_path / "bad.json"), input=f"{DATE}\n".encode())
    assert bad.returncode == 1 and bad.stderr.decode().count("\n") == 1 and not (tmp_path / "bad.json").exists()


@needs_chromium
def test_the_hf_beam_tree_in_the_browser(hf_translator, tmp_path):
    from playwright.sync_api import sync_playwright

    from nmt.viz import notebook
    from tests.test_attention_views import keep_screenshot, open_page

    page_file = tmp_path / "tree.html"
    notebook.beam_tree(hf_translator, DATE, beam_size=3, prefix="e").save(page_file)
    tree = json.loads(re.search(r"const NMT = (.*?);\n", page_file.read_text()).group(1))
    tree = tree["sentences"][0]["results"][0]["tree"]
    problems = []
    with sync_playwright() as playwright:
        browser, page = open_page(playwright, page_file.as_uri(), problems)
        page.wait_for_selector("svg.beam-tree")
        rows = [(r.locator("td.text").inner_text(), r.locator("td.final-score").inner_text())
                for r in page.locator("tr.final-row").all()]
        forced = page.locator("g.node.forced").count()
        said = page.locator(".score").first.inner_text()
        legend = page.inner_text(".tree-box .legend") if page.locator(".tree-box .legend").count() else \
            page.locator("p.legend").first.inner_text()
        page.locator("g.node.final[data-rank='1']").click()
        prefix_rows = page.locator("svg.prefix-heatmap rect.cell[data-col='0']").count()
        keep_screenshot(page, "beam_tree_hf")
        browser.close()
    assert rows == [(f["text"], f"{f['score']:.4f}") for f in tree["finals"]]
    assert forced == sum(n["state"] == "forced" for n in tree["nodes"]) >= 1
    assert "as Hugging Face generate() ranks them" in legend and "yellow the forced prefix" in legend
    assert prefix_rows == tree["finals"][0]["length"] + forced
    assert said.startswith(f"score {tree['finals'][0]['score']:.3f}: the beam's ranking score as Hugging Face "
                           "generate() ranks it") and said.endswith("were forced (given, not scored)")
    assert problems == []
