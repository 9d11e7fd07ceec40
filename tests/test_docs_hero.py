"""The hero picture of the README and the docs home page: drawn from the shipped model
(scripts/docs/docs_hero.py), its caption agreeing with the picture and with the model card."""

import json
import re

import pytest

from nmt.pretrained import MODELS, model_card
from scripts.docs.docs_hero import PAGES, PICTURE, RECORD, caption_problems, looked_at
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


@pytest.mark.usefixtures("one_thread")
def test_the_record_is_what_the_model_does_now(record):
    from nmt.translator import Translator

    out = Translator.pretrained(record["model"], device="cpu").translate([record["sentence"]])[0]
    assert out.text == record["translation"]
    assert [r["output"] for r in record["rows"]] == out.tgt_pieces
    assert [r["source"] for r in record["rows"]] == [out.src_pieces[int(w.argmax())] for w in out.attention]
    assert looked_at(record)["bicycle"] == "Fahrrad"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_caption_matches_the_model_card(page, record):
    """What the caption says of the model (its architecture and BLEU) is what its card says,
    and the card quotes the same sentence and translation; the BLEU is the record's."""
    card = " ".join(model_card(record["model"]).read_text(encoding="utf-8").split())
    caption = " ".join(page.read_text(encoding="utf-8").split())
    about = re.search(r"`multi30k-de-en` \((a GRU with Luong general attention) trained on Multi30k, "
                      r"test_2016_flickr BLEU (\d+\.\d)", caption)
    assert about, "the caption names the model's architecture and test_2016_flickr BLEU"
    architecture, bleu = about.groups()
    assert f"**Architecture:** {architecture}" in card
    greedy = next(r for r in json.loads(BENCH.read_text())["results"]
                  if r["test_set"] == "test_2016_flickr" and r["search"] == "greedy")
    assert f"{greedy['shipped']['bleu']:.1f}" == bleu
    assert f"| test_2016_flickr | greedy | {greedy['float32']['bleu']:.2f} | {greedy['shipped']['bleu']:.2f} |" in card
    assert f"BLEU {bleu} greedy" in MODELS[record["model"]]
    assert f'"{record["sentence"]}" → "{record["translation"]}"' in card
