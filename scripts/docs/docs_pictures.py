"""The pictures of the docs' *Attention, seen* pages: one toy-task model per mechanism,
trained from Python with the attention study's toy recipe (nmt_study/configs.py), then
one date translated and its attention drawn (nmt.viz.heatmaps).

    python -m scripts.docs.docs_pictures                      # every picture, into docs/images/attention/
    python -m scripts.docs.docs_pictures --only bahdanau,transformer-rotary --steps 100

Each picture is docs/images/attention/NAME.png; docs/images/attention/pictures.json
records, per picture, the overrides it was trained with, its updates, its validation
BLEU, the translation and the commit. Run it pinned to one core on a shared machine:
`taskset -c 0 python -m scripts.docs.docs_pictures`.
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

from nmt.data.alignments import main as write_alignments
from nmt.base.provenance import git_commit
from nmt_study.configs import study_configs
from nmt.commands.train import fit
from nmt.translator import Translator
from nmt.viz.heatmaps import save_figure

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "images" / "attention"
SENTENCE = "thursday the twenty second of march twenty forty seven"
# the study's toy configurations drawn on the pages, in page order
PICTURES = [
    "bahdanau",
    "luong_general",
    "luong_location",
    "multihead",
    "luong_general-local_m",
    "bahdanau-local_p",
    "bahdanau-hard",
    "bahdanau-sparsemax",
    "bahdanau-entmax15",
    "coverage",
    "bahdanau-guided",
    "lstmn",
    "bridge-zero",
    "transformer-sinusoidal",
    "transformer-learned",
    "transformer-relative",
    "transformer-rotary",
    "transformer-alibi",
    "transformer-none",
]


def training_overrides(name: str, steps: int, cache_dir: Path, alignments: Path) -> list[str]:
    """The study's toy recipe for `name`, trained `steps` updates, validated once at the end."""
    config = {c.name: c for c in study_configs("toy")}[name]
    extra = [f"data.train_alignments={alignments}"] if config.needs_alignments else []
    return [
        "data=toy",
        *config.overrides,
        *extra,
        f"trainer.max_steps={steps}",
        f"trainer.val_every={steps}",
        "trainer.val_max_sentences=100",
        "trainer.test_max_sentences=0",
        "trainer.heatmap_sentences=1",
        "trainer.keep_last=0",
        "trainer.seed=1",
        f"cache_dir={cache_dir}",
    ]


def draw(name: str, checkpoint: Path) -> dict:
    """Translate SENTENCE with the model and write its heatmap; the translation's record."""
    out = Translator.from_checkpoint(checkpoint, device="cpu").translate([SENTENCE])[0]
    sparse = "sparsemax" in name or "entmax" in name
    save_figure(out.plot(title=f"{name}: {out.text}", exact_zeros=sparse), OUT / f"{name}.png", dpi=150)
    return {"translation": out.text}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated names of PICTURES (default: all)")
    parser.add_argument("--steps", type=int, default=300, help="updates per model (the toy study trains 600)")
    parser.add_argument("--runs", type=Path, help="where the runs go (default: a temporary folder)")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else PICTURES
    unknown = [n for n in names if n not in PICTURES]
    if unknown:
        parser.error(f"--only {','.join(unknown)}: not a picture; choose from {', '.join(PICTURES)}")
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True)
    record_path = OUT / "pictures.json"
    records = json.loads(record_path.read_text()) if record_path.exists() else {}
    with tempfile.TemporaryDirectory() as scratch:
        runs = args.runs or Path(scratch)
        alignments = runs / "toy.align"
        runs.mkdir(parents=True, exist_ok=True)
        write_alignments(["toy", str(alignments)])
        for name in names:
            overrides = training_overrides(name, args.steps, runs / "cache", alignments)
            result = fit(overrides, run_dir=runs / name)
            record = {
                "overrides": [o for o in overrides if not o.startswith(("cache_dir=", "data.train_alignments="))],
                "updates": result.summary["step"],
                "validation_bleu": round(result.summary["bleu"], 2),
                "commit": git_commit(),
                **draw(name, result.best_checkpoint),
            }
            records[name] = record
            record_path.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
            print(
                f"{name}: validation BLEU {record['validation_bleu']:.2f} after {record['updates']} updates; "
                f"{OUT / (name + '.png')}",
                flush=True,
            )
    print(f"command: python -m scripts.docs.docs_pictures {' '.join(argv or sys.argv[1:])}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
