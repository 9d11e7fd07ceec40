"""Hugging Face encoder-decoders (--hf): a tiny Marian model built offline, opened by path."""

import json
import re

import numpy as np
import pytest

from tests.helpers import run_cli
from tests.test_attention_html import DATE

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
    # 25 source subwords: two cards (00001_source_1-12.png, 00001_source_13-25.png)
    assert sorted(p.name for p in plots.iterdir()) == ["00001_source_1-12.png", "00001_source_13-25.png"]


@pytest.mark.parametrize("make, message", [
    (lambda d: d, "is not a Hugging Face model folder (no config.json in it)"),
    (lambda d: (d / "config.json").write_text(json.dumps({"model_type": "bert"})) and d,
     "is a bert model, not an encoder-decoder"),
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
    assert result.returncode == 1 and "--checkpoint PATH (nmt) or --hf NAME_OR_FOLDER" in result.stderr.decode()


def test_the_explorer_shows_an_hf_model_beside_an_nmt_one(marian, toy_checkpoint):
    from fastapi.testclient import TestClient

    from nmt.explore import HFModel, Model, create_app

    app = create_app([Model(str(toy_checkpoint), "cpu"), HFModel(str(marian), "cpu")])
    reply = TestClient(app).post("/api/translate", json={"text": DATE, "beam_size": 2, "prefix": "e"}).json()
    nmt_result, hf_result = reply["results"]
    assert [m["name"] for m in hf_result["maps"]] == ["cross", "encoder-self", "decoder-self"]
    assert "tree" in nmt_result and "tree" not in hf_result and hf_result["tree_note"].startswith("no beam tree")
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
