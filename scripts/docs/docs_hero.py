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

This model's attention is nearly one-hot, so the record also holds how sharp the rows are,
measured on the picture's own weights (float32): the mean row entropy in bits beside a
uniform row's (the colour bar's numbers), the smallest top weight of a row, and each row's
gap between its two best scores (log of the top weight over the second: softmax's scores
differ by exactly that; null where the second weight underflowed to 0 in float32). Beside
them, the study's attention entropy on test_2016_flickr of this model's run and of the same
recipe with the score divided by sqrt(d) (luong_general-scaled, seed 101), converted to bits.
The caption must quote each of these numbers as the record has them.
"""

import json
import math
import re
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from nmt.pretrained import MODELS
from nmt.base.provenance import git_commit
from nmt.translator import Translator
from nmt.viz.colour_scale import row_entropy
from nmt.viz.heatmaps import save_figure

ROOT = Path(__file__).resolve().parents[2]
PICTURE = ROOT / "docs" / "images" / "hero_multi30k.png"
RECORD = PICTURE.with_suffix(".json")
MODEL = "multi30k-de-en"
SENTENCE = "Eine Frau mit einem großen Hut fährt auf einem Fahrrad durch die Stadt."
PAGES = (ROOT / "README.md", ROOT / "docs" / "index.md")
RED_HAT = "Ein Mann mit einem roten Hut sitzt auf einer Bank im Park."
RED_HAT_PICTURE = ROOT / "docs" / "images" / "multi30k_red_hat.png"
CLAIM = re.compile(r"(\w+) at (\w+)")  # "bicycle at Fahrrad": where an output word looked
STUDY = ROOT / "benchmarks" / "attention_study" / "preregistered" / "records"
# the study's runs of this model's recipe: unscaled (the shipped weights) and scaled by 1/sqrt(d)
STUDY_RUNS = {"unscaled": "luong_general/seed101.json", "scaled": "luong_general-scaled/seed101.json"}
# what the caption must say of the rows' sharpness, each number as sharpness() formats it
SHARPNESS_CLAIMS = {
    "mean_entropy_bits": "mean row entropy {} bits",
    "uniform_entropy_bits": "a uniform row over these {n} subwords has {}",
    "smallest_top_weight": "at least {} of its weight",
    "smallest_gap": "beat the next by at least {}",
    "study_scaled_bits": "that variant's rows average {} bits",
    "study_unscaled_bits": "this model's {}",
}


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
    problems = [
        f"does not quote {what}"
        for what in (record["sentence"], record["translation"], record["model"])
        if what not in text
    ]
    seen = looked_at(record)
    claims = re.findall(r"\(([^()]*)\)", caption)
    if not claims:
        problems.append("names no word pairs in parentheses (output at source)")
    for output, source in CLAIM.findall(claims[-1] if claims else ""):
        if seen.get(output) != source:
            problems.append(f"says {output} at {source}; the picture shows {output} at {seen.get(output)}")
    return problems + sharpness_problems(" ".join(caption.split()), record)


def sharpness(weights: np.ndarray) -> tuple[dict, list]:
    """weights (T, S) of the picture -> (the caption's numbers, formatted as the caption
    quotes them; each row's gap between its two best scores, None where the second
    weight is 0 in float32)."""
    mean, uniform = row_entropy(weights)
    top2 = np.sort(np.asarray(weights, dtype=np.float64), axis=1)[:, -2:]  # (T, 2)
    gaps = [round(math.log(a / b), 1) if b > 0 else None for b, a in top2]
    studied = {k: json.loads((STUDY / v).read_text())["eval"]["entropy"] / math.log(2) for k, v in STUDY_RUNS.items()}
    numbers = {
        "mean_entropy_bits": f"{mean:.2f}",
        "uniform_entropy_bits": f"{uniform:.2f}",
        "source_subwords": weights.shape[1],
        "smallest_top_weight": f"{math.floor(float(top2[:, 1].min()) * 1e5) / 1e5:.5f}",
        "smallest_gap": f"{min(g for g in gaps if g is not None):.1f}",
        "study_scaled_bits": f"{studied['scaled']:.2f}",
        "study_unscaled_bits": f"{studied['unscaled']:.2f}",
    }
    return numbers, gaps


def sharpness_problems(caption: str, record: dict) -> list[str]:
    """Each number of the rows' sharpness the caption does not quote as the record has it."""
    numbers = record["sharpness"]
    problems = []
    for key, words in SHARPNESS_CLAIMS.items():
        claim = words.format(numbers[key], n=numbers["source_subwords"])
        if claim not in caption:
            problems.append(f"does not say '{claim}' (the picture's {key})")
    return problems


def draw_red_hat() -> str:
    """RED_HAT through the command as a user runs it -> its translation; the picture copied."""
    from nmt.commands.translate import main as translate

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "in.de").write_text(RED_HAT + "\n", encoding="utf-8")
        argv = [
            "--model",
            MODEL,
            "--input",
            str(folder / "in.de"),
            "--output",
            str(folder / "out.en"),
            "--plot-attention",
            str(folder / "pictures"),
        ]
        if translate(argv) != 0:
            raise SystemExit("nmt.translate failed")
        shutil.copyfile(folder / "pictures" / "00001.png", RED_HAT_PICTURE)
        return (folder / "out.en").read_text(encoding="utf-8").strip()


def main() -> int:
    out = Translator.pretrained(MODEL, device="cpu").translate([SENTENCE])[0]
    save_figure(out.plot(title=f"{MODEL}: {out.text}"), PICTURE, dpi=150)
    numbers, gaps = sharpness(out.attention)
    rows = [
        {
            "output": piece,
            "source": out.src_pieces[int(weights.argmax())],
            "weight": round(float(weights.max()), 3),
            "gap": gap,
        }
        for piece, weights, gap in zip(out.tgt_pieces, out.attention, gaps)
    ]
    record = {
        "model": MODEL,
        "about": MODELS[MODEL],
        "sentence": SENTENCE,
        "search": "greedy",
        "translation": out.text,
        "picture": PICTURE.name,
        "rows": rows,
        "sharpness": numbers,
        "commit": git_commit(),
        "command": "python -m scripts.docs.docs_hero",
    }
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
