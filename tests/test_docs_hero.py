"""The hero picture of the README and the docs home page: drawn from the shipped model
(scripts/docs/docs_hero.py), its caption agreeing with the picture and with the model card."""

import json
import re

import numpy as np
import pytest

from nmt.pretrained import MODELS, model_card
from scripts.docs.docs_hero import PAGES, PICTURE, RECORD, caption_problems, looked_at, sharpness
from tests.helpers import ROOT, one_thread  # noqa: F401 (a fixture)

BENCH = ROOT / "benchmarks" / "pretrained_multi30k-de-en.json"


@pytest.fixture(scope="module")
def record():
    return json.loads(RECORD.read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_caption_agrees_with_the_picture(page, record):
    assert PICTURE.is_file()
    assert caption_problems(page.read_text(encoding="utf-8"), record) == []


def test_a_wrong_claim_is_caught(record):
    text = (ROOT / "README.md").read_text(encoding="utf-8").replace("city at Stadt", "city at Frau")
    assert caption_problems(text, record) == ["says city at Frau; the picture shows city at Stadt"]


def test_sharpness_by_hand():
    weights = np.array([[0.5, 0.5], [1.0, 0.0], [0.8, 0.2]], dtype=np.float32)  # (T=3, S=2)
    numbers, gaps = sharpness(weights)
    # entropies 1, 0 and -(0.8 log2 0.8 + 0.2 log2 0.2) = 0.7219 bits: mean 0.5740; uniform log2 2 = 1
    assert numbers["mean_entropy_bits"] == "0.57" and numbers["uniform_entropy_bits"] == "1.00"
    assert numbers["source_subwords"] == 2 and numbers["smallest_top_weight"] == "0.50000"
    # gaps: log(0.5/0.5) = 0; the second weight 0 -> None; log(0.8/0.2) = log 4 = 1.386
    assert gaps == [0.0, None, 1.4] and numbers["smallest_gap"] == "0.0"
    # the study's records: entropy 1.2371 and 0.0400 nats / ln 2 = 1.785 and 0.058 bits
    assert numbers["study_scaled_bits"] == "1.78" and numbers["study_unscaled_bits"] == "0.06"


def test_the_caption_says_the_attention_is_nearly_one_hot_in_the_pictures_numbers(record):
    assert record["sharpness"]["mean_entropy_bits"] == "0.00"
    assert float(record["sharpness"]["smallest_top_weight"]) >= 0.999
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "nearly one-hot" in text
    wrong = re.sub(r"beat\s+the\s+next\s+by\s+at\s+least\s+13\.1", "beat the next by at least 2.0", text)
    assert caption_problems(wrong, record) == [
        "does not say 'beat the next by at least 13.1' (the picture's smallest_gap)"
    ]
    wrong = re.sub(r"mean\s+row\s+entropy\s+0\.00", "mean row entropy 1.50", text)
    assert caption_problems(wrong, record) == [
        "does not say 'mean row entropy 0.00 bits' (the picture's mean_entropy_bits)"
    ]


@pytest.mark.usefixtures("one_thread")
def test_the_record_is_what_the_model_does_now(record):
    from nmt.translator import Translator

    out = Translator.pretrained(record["model"], device="cpu").translate([record["sentence"]])[0]
    assert out.text == record["translation"]
    assert [r["output"] for r in record["rows"]] == out.tgt_pieces
    assert [r["source"] for r in record["rows"]] == [out.src_pieces[int(w.argmax())] for w in out.attention]
    assert looked_at(record)["bicycle"] == "Fahrrad"
    numbers, gaps = sharpness(out.attention)
    assert numbers == record["sharpness"]
    assert gaps == [r["gap"] for r in record["rows"]]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_caption_matches_the_model_card(page, record):
    """What the caption says of the model (its architecture and BLEU) is what its card says,
    and the card quotes the same sentence and translation; the BLEU is the record's."""
    card = " ".join(model_card(record["model"]).read_text(encoding="utf-8").split())
    caption = " ".join(page.read_text(encoding="utf-8").split())
    about = re.search(
        r"`multi30k-de-en` \((a GRU with Luong general attention) trained on Multi30k, "
        r"test_2016_flickr BLEU (\d+\.\d)",
        caption,
    )
    assert about, "the caption names the model's architecture and test_2016_flickr BLEU"
    architecture, bleu = about.groups()
    assert f"**Architecture:** {architecture}" in card
    greedy = next(
        r
        for r in json.loads(BENCH.read_text())["results"]
        if r["test_set"] == "test_2016_flickr" and r["search"] == "greedy"
    )
    assert f"{greedy['shipped']['bleu']:.1f}" == bleu
    assert f"| test_2016_flickr | greedy | {greedy['float32']['bleu']:.2f} | {greedy['shipped']['bleu']:.2f} |" in card
    assert f"BLEU {bleu} greedy" in MODELS[record["model"]]
    assert f'"{record["sentence"]}" → "{record["translation"]}"' in card
