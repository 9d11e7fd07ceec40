"""BLEU of the shipped pretrained model against the float32 checkpoint it was made from.

    taskset -c 0 python -m scripts.benchmarks.bench_pretrained --fp32 RUN/checkpoints/best.pt \\
        --out benchmarks/pretrained_multi30k-de-en.json

For each test set of Multi30k found in --data (test_2016_flickr, test_2017_flickr) and
each search (greedy, beam 5), both checkpoints translate the whole set; the record holds
sacreBLEU's BLEU and chrF with their signatures, the share of identical lines, the
seconds each took, the date, the CPU (lscpu's model name), the command and the commit.
"""

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

from nmt import cpu_description, read_cpuinfo
from nmt.base.provenance import git_commit
from nmt.base.scoring import score_translations
from nmt.data.readers import read_lines
from nmt.pretrained import checkpoint_path
from nmt.translator import Translator
from scripts.out_path import ready_file
from scripts.peers.compare_joeynmt import MULTI30K  # the shared data beside the checkout

TEST_SETS = ("test_2016_flickr", "test_2017_flickr")
SEARCHES = {"greedy": 1, "beam5": 5}
SLICE = 200          # also scored: the first SLICE lines (tests/test_pretrained.py checks the shipped model on them)


def test_file(data: Path, name: str, lang: str) -> Path | None:
    """data/NAME.LANG.gz or data/NAME.LANG, whichever exists."""
    for path in (data / f"{name}.{lang}.gz", data / f"{name}.{lang}"):
        if path.is_file():
            return path
    return None


def measure(translator, sources, references, beam: int) -> dict:
    start = time.perf_counter()
    outputs = [o.text for o in translator.translate(sources, beam_size=beam, batch_size=64)]
    seconds = time.perf_counter() - start
    bleu, chrf, bleu_sig, chrf_sig = score_translations(outputs, references)
    first = score_translations(outputs[:SLICE], references[:SLICE])[0]
    return {"bleu": round(bleu, 2), "chrf": round(chrf, 2), "bleu_signature": bleu_sig,
            "chrf_signature": chrf_sig, f"bleu_first_{SLICE}": round(first, 2), "seconds": round(seconds, 1),
            "outputs": outputs}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fp32", type=Path, required=True, help="the float32 checkpoint the shipped copy came from")
    parser.add_argument("--model", default="multi30k-de-en", help="the shipped model's name")
    parser.add_argument("--data", type=Path, default=MULTI30K, help="Multi30k folder with the test sets")
    parser.add_argument("--out", type=Path, required=True, help="the JSON record to write")
    args = parser.parse_args(argv)
    out = ready_file(args.out, "bench_pretrained")
    torch.set_num_threads(1)
    models = {"float32": Translator.from_checkpoint(args.fp32, device="cpu"),
              "shipped": Translator.pretrained(args.model, device="cpu")}
    record = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu_description(read_cpuinfo()),
              "threads": 1, "commit": git_commit(), "model": args.model,
              "shipped_dtype": str(next(iter(torch.load(checkpoint_path(args.model), weights_only=True)["model"]
                                             .values())).dtype).removeprefix("torch."),
              "command": "python -m scripts.benchmarks.bench_pretrained " + " ".join(argv or sys.argv[1:]), "results": []}
    for name in TEST_SETS:
        src, ref = test_file(args.data, name, "de"), test_file(args.data, name, "en")
        if src is None or ref is None:
            continue
        sources, references = read_lines(src), read_lines(ref)
        for search, beam in SEARCHES.items():
            row = {"test_set": name, "sentences": len(sources), "search": search}
            runs = {kind: measure(t, sources, references, beam) for kind, t in models.items()}
            same = sum(a == b for a, b in zip(runs["float32"]["outputs"], runs["shipped"]["outputs"]))
            for kind, run in runs.items():
                run.pop("outputs")
                row[kind] = run
            row["identical_lines"] = same
            record["results"].append(row)
            print(f"{name} {search}: float32 BLEU {runs['float32']['bleu']:.2f}, shipped "
                  f"{runs['shipped']['bleu']:.2f}; {same} of {len(sources)} lines identical", flush=True)
            out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
