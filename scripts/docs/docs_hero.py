"""The README's and the docs home page's picture: the shipped model's attention on one sentence.

    python -m scripts.docs.docs_hero            # docs/images/hero_multi30k.png and hero_multi30k.json

It also draws docs/images/multi30k_red_hat.png, the picture of the translate and
attention pages, as their command does (`nmt.translate --model multi30k-de-en
--plot-attention`, beam 5, on RED_HAT).

The model (nmt.pretrained: multi30k-de-en) translates SENTENCE greedily; the heatmap is
drawn from its attention, and docs/images/hero_multi30k.json records the translation,
where each output subword looked most (source subword and weight) and the commit. Then
the captions are checked against what was drawn: each page's caption must quote the
sentence and its translation, name the model, and every "X at Y" its last parentheses
claim must be the source word the output word X looked at most. A caption that disagrees is named
with what the picture shows, exit status 1 (tests/test_docs_hero.py checks the same).
"""

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

from nmt.pretrained import MODELS
from nmt.base.provenance import git_commit
from nmt.translator import Translator
from nmt.viz.heatmaps import save_figure

ROOT = Path(__file__).resolve().parents[2]
PICTURE = ROOT / "docs" / "images" / "hero_multi30k.png"
RECORD = PICTURE.with_suffix(".json")
MODEL = "multi30k-de-en"
SENTENCE = "Eine Frau mit einem großen Hut fährt auf einem Fahrrad durch die Stadt."
PAGES = (ROOT / "README.md", ROOT / "docs" / "index.md")
RED_HAT = "Ein Mann mit einem roten Hut sitzt auf einer Bank im Park."
RED_HAT_PICTURE = ROOT / "docs" / "images" / "multi30k_red_hat.png"
CLAIM = re.compile(r"(\w+) at (\w+)")          # "bicycle at Fahrrad": where an output word looked


def looked_at(record: dict) -> dict:
    """output word (its subword without ▁) -> the source word it looked at most (without ▁)."""
    return {row["output"].lstrip("▁"): row["source"].lstrip("▁") for row in record["rows"]}


def caption_problems(page_text: str, record: dict) -> list[str]:
    """What a page's hero caption (the paragraph after the picture) gets wrong; [] when it agrees."""
    name = record["picture"]
    found = re.search(rf"!\[([^\]]*)\]\([^)]*{re.escape(name)}\)\s*\n\s*\n?\*([^*]+)\*", page_text)
    if not found:
        return [f"no picture {name} followed by an italic caption"]
    alt, caption = found.groups()
    text = " ".join(f"{alt} {caption}".split())
    problems = [f"does not quote {what}" for what in (record["sentence"], record["translation"], record["model"])
                if what not in text]
    seen = looked_at(record)
    claims = re.findall(r"\(([^()]*)\)", caption)
    if not claims:
        problems.append("names no word pairs in parentheses (output at source)")
    for output, source in CLAIM.findall(claims[-1] if claims else ""):
        if seen.get(output) != source:
            problems.append(f"says {output} at {source}; the picture shows {output} at {seen.get(output)}")
    return problems


def draw_red_hat() -> str:
    """RED_HAT through the command as a user runs it -> its translation; the picture copied."""
    from nmt.commands.translate import main as translate

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "in.de").write_text(RED_HAT + "\n", encoding="utf-8")
        argv = ["--model", MODEL, "--input", str(folder / "in.de"), "--output", str(folder / "out.en"),
                "--plot-attention", str(folder / "pictures")]
        if translate(argv) != 0:
            raise SystemExit("nmt.translate failed")
        shutil.copyfile(folder / "pictures" / "00001.png", RED_HAT_PICTURE)
        return (folder / "out.en").read_text(encoding="utf-8").strip()


def main() -> int:
    out = Translator.pretrained(MODEL, device="cpu").translate([SENTENCE])[0]
    save_figure(out.plot(title=f"{MODEL}: {out.text}"), PICTURE, dpi=150)
    rows = [{"output": piece, "source": out.src_pieces[int(weights.argmax())], "weight": round(float(weights.max()), 3)}
            for piece, weights in zip(out.tgt_pieces, out.attention)]
    record = {"model": MODEL, "about": MODELS[MODEL], "sentence": SENTENCE, "search": "greedy",
              "translation": out.text, "picture": PICTURE.name, "rows": rows, "commit": git_commit(),
              "command": "python -m scripts.docs.docs_hero"}
    RECORD.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{PICTURE}: {out.text}")
    print(f"{RED_HAT_PICTURE}: {draw_red_hat()}")
    print("  " + " ".join(f"{r['output']}>{r['source']}" for r in rows))
    bad = 0
    for page in PAGES:
        for problem in caption_problems(page.read_text(encoding="utf-8"), record):
            print(f"{page.relative_to(ROOT)}: the hero caption {problem}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
