"""Every limit of a Hugging Face model is checked before generation (--hf): the source
side's positions, the output side's, the vocabulary and a forced prefix's length give
one line, never a traceback, an HTTP 500 or a silent cut; in the explorer the other
model's result of the same request is kept."""

import pytest

from tests.helpers import run_cli
from tests.test_attention_html import DATE

transformers = pytest.importorskip("transformers", reason="the hf extra is not installed (pip install 'nmt[hf]')")

FIFTY_FOUR = " ".join((DATE.split() * 6)[:54])         # 54 words


@pytest.fixture(scope="module")
def marian16(tmp_path_factory):
    from tests.hf_marian import build_tiny_marian

    return build_tiny_marian(tmp_path_factory.mktemp("marian16"), positions=16)


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    from tests.hf_marian import build_tiny_marian

    return build_tiny_marian(tmp_path_factory.mktemp("marian64"))


def test_a_source_past_the_positions_is_refused_in_one_line_not_cut(marian16):
    from nmt.hf.translator import HFTranslator

    n = len(HFTranslator(str(marian16), device="cpu").tokenizer.encode_src(FIFTY_FOUR))
    result = run_cli("nmt.translate", "--hf", str(marian16), input=f"{FIFTY_FOUR}\n".encode())
    assert result.returncode == 1 and result.stdout == b""
    assert result.stderr.decode() == (f"nmt: error: the sentence has {n} subwords but this model takes at most 16; "
                                      "shorten it\n")
    several = run_cli("nmt.translate", "--hf", str(marian16), input=f"monday\n{FIFTY_FOUR}\n".encode())
    assert several.returncode == 1 and several.stderr.decode().startswith("nmt: error: line 2: the sentence has")
    assert several.stderr.decode().count("\n") == 1


def test_an_output_limit_past_the_positions_is_capped_and_said(marian):
    """49 source subwords: nmt's limit 1.5 * 49 + 11 = 84 exceeds the 64 positions; --min-length
    makes the untrained model run to the limit, which ended in an IndexError traceback."""
    from nmt.hf.translator import HFTranslator

    source = f"{DATE} {DATE}"
    translator = HFTranslator(str(marian), device="cpu")
    S = len(translator.tokenizer.encode_src(source))
    assert translator.max_new_tokens(S) > 64 and translator.output_limit(S) == 63
    result = run_cli("nmt.translate", "--hf", str(marian), "--beam-size", "2", "--min-length", "70",
                     input=f"{source}\n".encode())
    err = result.stderr.decode()
    assert result.returncode == 0, err
    assert "Traceback" not in err and "reached" in err and "64 decoder positions" in err
    assert len(result.stdout.decode().splitlines()) == 1
    out = translator.translate([source], beam_size=2, min_length=70)[0]
    assert len(out.tokens) + 1 <= 63                    # start + output + </s> within 64 positions


def test_a_prefix_is_checked_against_the_positions_and_counts_in_the_output_limit(marian):
    """The prefix's subwords count in the output limit (max_new_tokens is what follows it):
    20-22 words (40-44 subwords) passed the check, then ran past 64 positions."""
    from nmt.base.errors import NmtError
    from nmt.hf.translator import HFTranslator

    translator = HFTranslator(str(marian), device="cpu")
    S = len(translator.tokenizer.encode_src(DATE))
    for words in (18, 20, 22):
        out = translator.translate([DATE], prefix=" ".join(["the"] * words))[0]
        assert out.forced == 2 * words and len(out.tokens) + 1 <= translator.output_limit(S)
    with pytest.raises(NmtError, match="the prefix has 48 subwords but an output for a source of"):
        translator.translate([DATE], prefix=" ".join(["the"] * 24))


def test_the_explorer_keeps_the_other_models_result(marian16, toy_checkpoint):
    from fastapi.testclient import TestClient

    from nmt.commands.explore import HFModel, Model, create_app

    hf = HFModel(str(marian16), "cpu")
    client = TestClient(create_app([Model(str(toy_checkpoint), "cpu"), hf]), base_url="http://127.0.0.1:8000")
    assert len(hf.translator.tokenizer.encode_src(DATE)) > 16            # the nmt model takes it, the Marian not
    reply = client.post("/api/translate", json={"text": DATE, "beam_size": 2})
    assert reply.status_code == 200
    nmt_result, hf_result = reply.json()["results"]
    assert nmt_result["text"] and nmt_result["maps"]
    assert hf_result == {"error": f"the sentence has {len(hf.translator.tokenizer.encode_src(DATE))} subwords but "
                                  "this model takes at most 16; shorten it"}
    source, prefix = "monday the first", "the " * 8
    S = len(hf.translator.tokenizer.encode_src(source))
    F = len(hf.translator.hf_tokenizer(text_target=prefix.strip(), add_special_tokens=False)["input_ids"])
    assert 14 < F <= hf.translator.max_new_tokens(S) - 1           # within nmt's limit, past the 16 positions
    reply = client.post("/api/translate", json={"text": source, "beam_size": 1, "prefix": prefix})
    assert reply.status_code == 200
    free, forced = reply.json()["results"], reply.json()["forced"]
    assert free[1]["text"] is not None and "error" not in free[1]
    assert "decoder has 16 positions" in forced[1]["error"] and "\n" not in forced[1]["error"]


def test_a_tokenizer_past_the_models_vocabulary_is_one_line(marian, tmp_path):
    import shutil

    folder = tmp_path / "small_vocab"
    shutil.copytree(marian, folder)
    model = transformers.MarianMTModel.from_pretrained(folder)
    model.resize_token_embeddings(8)
    model.save_pretrained(folder)
    result = run_cli("nmt.translate", "--hf", str(folder), input=f"{DATE}\n".encode())
    err = result.stderr.decode()
    assert result.returncode == 1 and err.count("\n") == 1, err
    assert "embeddings hold 8 ids; its tokenizer and model do not match" in err
