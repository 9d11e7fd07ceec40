"""The attention pictures of the docs come from models that learned: each one's record
says which model drew it and how well that model translates, and a test fails when a
picture a page shows is drawn from a model below the stated bar.

    docs/images/attention/*.png     the toy-task models of scripts/docs/docs_pictures.py:
                                    validation BLEU >= TOY_BAR (pictures.json)
    docs/images/hero_multi30k.png,  the shipped multi30k-de-en (scripts/docs/docs_hero.py):
    multi30k_red_hat.png            its test_2016_flickr BLEU >= MULTI30K_BAR (benchmarks/)
"""

import json
import re

import pytest

from tests.helpers import ROOT

DOCS = ROOT / "docs"
TOY_BAR = 80.0          # validation BLEU on the toy task (dates): a model that reads most dates right
MULTI30K_BAR = 30.0     # test_2016_flickr BLEU, greedy: a model whose words are mostly right
PICTURES = json.loads((DOCS / "images" / "attention" / "pictures.json").read_text(encoding="utf-8"))


def shown_attention_pictures() -> list[str]:
    """The names (NAME of images/attention/NAME.png) that some page of docs/ shows."""
    pages = " ".join(p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md"))
    return sorted(set(re.findall(r"images/attention/([\w.-]+)\.png", pages)))


def test_the_pages_show_attention_pictures():
    assert len(shown_attention_pictures()) >= 15


@pytest.mark.parametrize("name", shown_attention_pictures())
def test_each_attention_picture_comes_from_a_model_that_learned(name):
    assert name in PICTURES, f"images/attention/{name}.png has no record in pictures.json"
    assert PICTURES[name]["validation_bleu"] >= TOY_BAR, (
        f"images/attention/{name}.png is drawn from a model of validation BLEU {PICTURES[name]['validation_bleu']}, "
        f"below {TOY_BAR}: train it longer (python -m scripts.docs.docs_pictures --only {name} --steps N)")


def test_the_shipped_models_pictures_come_from_a_model_that_learned():
    hero = json.loads((DOCS / "images" / "hero_multi30k.json").read_text(encoding="utf-8"))
    assert hero["model"] == "multi30k-de-en"
    record = json.loads((ROOT / "benchmarks" / "pretrained_multi30k-de-en.json").read_text())
    greedy = next(r for r in record["results"] if r["test_set"] == "test_2016_flickr" and r["search"] == "greedy")
    assert greedy["shipped"]["bleu"] >= MULTI30K_BAR
    for picture in ("hero_multi30k.png", "multi30k_red_hat.png"):
        assert (DOCS / "images" / picture).is_file()
