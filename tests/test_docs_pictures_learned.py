"""The attention pictures of the docs come from models that learned: each one's record
says which model drew it and how well that model translates, and a test fails when a
picture a page shows is drawn from a model below the stated bar.

    docs/images/attention/*.png     the toy-task models of scripts/docs/docs_pictures.py:
                                    validation BLEU >= TOY_BAR (pictures.json)
    docs/images/hero_multi30k.png,  the shipped multi30k-de-en (scripts/docs/docs_hero.py):
    multi30k_red_hat.png            its test_2016_flickr BLEU >= MULTI30K_BAR (benchmarks/)
    docs/beam_tree_hf.png           a Marian trained on the toy task (scripts/docs/docs_hf_tree.py):
                                    validation BLEU >= TOY_BAR (beam_tree_hf.json), quoted by its caption

And a BLEU on a page says what it was measured on: every prose paragraph of the docs pages
and the README that quotes a BLEU (so every caption, the paragraph after a picture) names its
data (the toy task of dates, or Multi30k) and its split, and an attention picture's caption
quotes its record's validation BLEU, updates and number of validation dates; the quick-start
page's expected range holds every test BLEU it shows.
"""

import json
import re

import pytest

from tests.helpers import ROOT

DOCS = ROOT / "docs"
TOY_BAR = 80.0  # validation BLEU on the toy task (dates): a model that reads most dates right
MULTI30K_BAR = 30.0  # test_2016_flickr BLEU, greedy: a model whose words are mostly right
PICTURES = json.loads((DOCS / "images" / "attention" / "pictures.json").read_text(encoding="utf-8"))
IMAGE = re.compile(r"^!\[[^\]]*\]\(([^)]+)\)\s*$", re.M)
BLEU = re.compile(r"BLEU,?\s+(?:of\s+)?(\d+(?:\.\d+)?)")  # "BLEU 81.91", "BLEU, 81.91", "BLEU of 5.49"
DATA = re.compile(r"toy task|Multi30k")
SPLIT = re.compile(r"validation|test_201[67]_flickr")


def captions() -> list[tuple[str, str, str]]:
    """(page, picture, caption) for every picture of docs/ and the README: the caption is
    the paragraph that follows the picture's line, on one line."""
    found = []
    for page in sorted([*DOCS.rglob("*.md"), ROOT / "README.md"]):
        text = page.read_text(encoding="utf-8")
        for image in IMAGE.finditer(text):
            after = text[image.end() :].lstrip("\n")
            paragraph = re.split(r"\n\s*\n", after, maxsplit=1)[0]
            found.append((str(page.relative_to(ROOT)), image.group(1), " ".join(paragraph.split())))
    return found


def prose_paragraphs() -> list[tuple[str, str]]:
    """(page, paragraph on one line) for the prose of docs/ and the README: not the generated
    reference pages, not code blocks (indented) and not tables, which quote a command's output
    or a record's columns under a heading that names them."""
    found = []
    for page in sorted([*DOCS.rglob("*.md"), ROOT / "README.md"]):
        if "reference" in page.relative_to(ROOT).parts:
            continue
        for paragraph in re.split(r"\n\s*\n", page.read_text(encoding="utf-8")):
            if not paragraph.startswith("    ") and not paragraph.lstrip().startswith("|"):
                found.append((str(page.relative_to(ROOT)), " ".join(paragraph.split())))
    return found


def bleu_problems(caption: str) -> list[str]:
    """What a caption quoting a BLEU leaves unsaid: its data and its split."""
    if not BLEU.search(caption):
        return []
    return [
        f"quotes a BLEU without naming its {what}"
        for what, pattern in (("data", DATA), ("split", SPLIT))
        if not pattern.search(caption)
    ]


def attention_caption_problems(name: str, caption: str) -> list[str]:
    """A caption of images/attention/NAME.png against its record in pictures.json."""
    record = PICTURES[name]
    quoted = BLEU.findall(caption)
    if not quoted:
        return []
    problems = []
    decimals = [len(q.partition(".")[2]) for q in quoted]
    if not any(q == f"{record['validation_bleu']:.{d}f}" for q, d in zip(quoted, decimals)):
        problems.append(f"quotes BLEU {', '.join(quoted)}; the record has {record['validation_bleu']}")
    if not re.search(rf"\b{record['updates']:,} updates", caption):
        problems.append(f"does not say the record's {record['updates']:,} updates")
    shown = next(o for o in record["overrides"] if o.startswith("trainer.val_max_sentences="))
    if f"first {shown.split('=')[1]} of" not in caption:
        problems.append(f"does not say that BLEU is on the first {shown.split('=')[1]} validation dates")
    return problems


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
        f"below {TOY_BAR}: train it longer (python -m scripts.docs.docs_pictures --only {name} --steps N)"
    )


def test_the_shipped_models_pictures_come_from_a_model_that_learned():
    hero = json.loads((DOCS / "images" / "hero_multi30k.json").read_text(encoding="utf-8"))
    assert hero["model"] == "multi30k-de-en"
    record = json.loads((ROOT / "benchmarks" / "pretrained_multi30k-de-en.json").read_text())
    greedy = next(r for r in record["results"] if r["test_set"] == "test_2016_flickr" and r["search"] == "greedy")
    assert greedy["shipped"]["bleu"] >= MULTI30K_BAR
    for picture in ("hero_multi30k.png", "multi30k_red_hat.png"):
        assert (DOCS / "images" / picture).is_file()


def test_the_hugging_face_beam_tree_comes_from_a_marian_that_learned():
    record = json.loads((DOCS / "beam_tree_hf.json").read_text(encoding="utf-8"))
    assert record["picture"] == "beam_tree_hf.png" and (DOCS / "beam_tree_hf.png").is_file()
    assert record["validation_bleu"] >= TOY_BAR, (
        f"docs/beam_tree_hf.png is drawn from a Marian of validation BLEU {record['validation_bleu']}, below "
        f"{TOY_BAR}: train it longer (python -m scripts.docs.docs_hf_tree --model-dir DIR --steps N)"
    )
    [caption] = [c for _, picture, c in captions() if picture == "../beam_tree_hf.png"]
    assert bleu_problems(caption) == []
    assert f"{record['validation_bleu']:.2f}" in BLEU.findall(caption), caption
    assert f"{record['validation_sentences']} validation dates" in caption
    assert f"{record['updates']:,} updates" in caption


def test_captions_are_found():
    pictures = [picture for _, picture, _ in captions()]
    assert any(p.endswith("images/attention/lstmn.png") for p in pictures)
    assert "docs/images/hero_multi30k.png" in pictures


@pytest.mark.parametrize(
    "page, picture, caption",
    [c for c in captions() if BLEU.search(c[2])],
    ids=lambda v: v if v.endswith((".md", ".png")) else "",
)
def test_a_caption_that_quotes_a_bleu_says_what_it_was_measured_on(page, picture, caption):
    assert bleu_problems(caption) == [], f"{page}, under {picture}"
    name = re.search(r"images/attention/([\w.-]+)\.png$", picture)
    if name:
        assert attention_caption_problems(name.group(1), caption) == [], f"{page}, under {picture}"


def test_every_paragraph_that_quotes_a_bleu_says_what_it_was_measured_on():
    quoting = [(page, text) for page, text in prose_paragraphs() if BLEU.search(text)]
    assert len(quoting) >= 20
    assert [(page, text[:120], bleu_problems(text)) for page, text in quoting if bleu_problems(text)] == []


def test_a_bare_bleu_is_caught():
    assert bleu_problems("after 1,000 updates (validation BLEU 81.91)") == ["quotes a BLEU without naming its data"]
    assert bleu_problems("a model of the toy task, BLEU 81.91") == ["quotes a BLEU without naming its split"]
    assert bleu_problems("Multi30k, test_2016_flickr BLEU 36.0") == []
    assert attention_caption_problems("lstmn", "the toy task, validation BLEU 81.9 after 900 updates") == [
        "does not say the record's 1,000 updates",
        "does not say that BLEU is on the first 100 validation dates",
    ]
    assert attention_caption_problems("lstmn", "the toy task, validation BLEU 82.91") == [
        "quotes BLEU 82.91; the record has 81.91",
        "does not say the record's 1,000 updates",
        "does not say that BLEU is on the first 100 validation dates",
    ]


def test_the_lstmn_caption_compares_with_the_other_toy_models_as_they_are():
    """lstmn-bridges.md: "11 of the 18 other toy models on these pages score 100 after 250 updates"."""
    others = [r for name, r in PICTURES.items() if name != "lstmn" and name in shown_attention_pictures()]
    perfect = [r for r in others if r["validation_bleu"] == 100.0 and r["updates"] == 250]
    page = " ".join((DOCS / "tutorials" / "attention-seen" / "lstmn-bridges.md").read_text(encoding="utf-8").split())
    assert f"{len(perfect)} of the {len(others)} other toy models on these pages score 100 after 250 updates" in page


def test_the_quick_start_page_quotes_the_range_its_runs_gave():
    """quick-start.md: "Expect a test BLEU of A to B", and every test BLEU the page shows
    (the summary block, the log, the runs it lists) lies in it."""
    page = " ".join((DOCS / "getting-started" / "quick-start.md").read_text(encoding="utf-8").split())
    low, high = map(float, re.search(r"Expect a test BLEU of ([\d.]+) to ([\d.]+)", page).groups())
    shown = [float(b) for b in re.findall(r"test set: (?:best\.pt on 200 sentences, greedy \| )?BLEU ([\d.]+)", page)]
    # "three runs gave 100.00 (the default `trainer.seed=1`, ...), 99.87 (`trainer.seed=2`) and 100.00 (`trainer.seed=3`)"
    listed = [float(b) for b in re.findall(r"(\d+\.\d\d) \((?:the default )?`trainer\.seed=\d`", page)]
    assert len(shown) == 2 and len(listed) == 3
    assert all(low <= b <= high for b in shown + listed), (low, high, shown, listed)
