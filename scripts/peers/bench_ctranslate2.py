"""nmt's decoder against CTranslate2 (float32 and int8) on test_2016_flickr: speed
and BLEU, same model, same process, same cores, greedy and beam, batch 1 and large.

    taskset -c 1 python -m scripts.peers.bench_ctranslate2 --checkpoint best.pt --threads 1
    taskset -c 0,1 python -m scripts.peers.bench_ctranslate2 --checkpoint best.pt --threads 2

The checkpoint is exported twice (nmt.deploy.convert: float32 and int8)
into a temporary folder. For every (search, batch size) the three engines
run one after the other on the same sentences: nmt.Translator (torch on
--threads threads), CTranslate2 float32 and int8 (nmt.deploy.engine,
intra_threads=--threads), each after an untimed warm-up on a few sentences,
so each ratio compares runs seconds apart on one machine. Beam search uses
nmt's ranking (Wu et al. length penalty --length-penalty) on both sides.
Target tokens count the output subwords and eos; outputs_sha1 hashes the
translations (equal hashes: equal outputs), same_as_nmt counts the sentences
a CTranslate2 engine translates token for token as nmt did. Batch 1 runs the first
--batch1-limit sentences (BLEU of those); the large batch runs --limit.
It prints each row, the ratios and the command, and writes JSON (--out).
"""

import argparse
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from nmt.base.cli_checks import finite_float
from nmt.base.provenance import git_commit

from scripts.benchmarks.bench_decode import read_lines  # test_2016_flickr, plain or .gz
from scripts.peers.compare_joeynmt import MULTI30K  # the shared data beside the checkout
from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a Transformer .pt written by nmt.train")
    parser.add_argument("--data", default=str(MULTI30K), help="folder with test_2016_flickr.{de,en}[.gz]")
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--src-lang", default="de")
    parser.add_argument("--tgt-lang", default="en")
    parser.add_argument("--threads", type=int, default=1, help="torch threads and CTranslate2 intra_threads")
    parser.add_argument("--beams", default="1,5", help="beam sizes, 1 = greedy")
    parser.add_argument("--batch-sizes", default="1,64", help="sentences per batch")
    parser.add_argument("--limit", type=int, default=1000, help="first N sentences of the split")
    parser.add_argument("--batch1-limit", type=int, default=200, help="first N sentences at batch size 1")
    parser.add_argument("--length-penalty", type=finite_float, default=1.0, help="Wu et al. alpha, both engines")
    parser.add_argument("--engines", default="nmt,ct2_float32,ct2_int8")
    parser.add_argument("--out", default=None, help="JSON file (default benchmarks/bench_ctranslate2_<N>t.json)")
    args = parser.parse_args(argv)
    args.out = ready_file(
        args.out or ROOT / "benchmarks" / f"bench_ctranslate2_{args.threads}t.json", "bench_ctranslate2"
    )
    return args


def machine() -> dict:
    """The CPU (lscpu's model name), the cores this process may use, the load."""
    try:
        lines = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines()
        model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("Model name")), "")
    except (OSError, subprocess.CalledProcessError):
        model = platform.processor()
    return {
        "cpu": model,
        "cores_allowed": sorted(os.sched_getaffinity(0)),
        "cpus": os.cpu_count(),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }


def engines(args, folder: Path) -> dict:
    """name -> translator, every one of the same checkpoint."""
    from nmt.deploy.convert import export_translator
    from nmt.deploy.engine import CTranslate2Translator
    from nmt.translator import Translator

    nmt = Translator.from_checkpoint(args.checkpoint, device="cpu")
    out = {"nmt": nmt}
    for name in args.engines.split(","):
        if name.startswith("ct2_"):
            quantization = name.removeprefix("ct2_")
            export_translator(nmt, folder / name, quantization, args.checkpoint)
            out[name] = CTranslate2Translator(folder / name, threads=args.threads)
    return {name: out[name] for name in args.engines.split(",")}


def main(argv=None) -> list[dict]:
    args = parse_args(argv)
    command = "python -m scripts.peers.bench_ctranslate2 " + shlex.join(sys.argv[1:] if argv is None else argv)
    torch.set_num_threads(args.threads)
    from nmt.base.scoring import score_translations

    folder = Path(args.data)
    sources = read_lines(folder, f"{args.split}.{args.src_lang}")[: args.limit]
    references = read_lines(folder, f"{args.split}.{args.tgt_lang}")[: args.limit]
    import ctranslate2

    before = machine()
    print(
        f"{command}\ncommit {git_commit()}, torch {torch.__version__}, ctranslate2 {ctranslate2.__version__}, "
        f"{args.threads} thread(s), cpu {before['cpu']}, cores {before['cores_allowed']}, "
        f"load {before['load_average_1_5_15']}"
    )
    rows, raw, reference_tokens = [], {}, []
    with tempfile.TemporaryDirectory() as tmp:
        translators = engines(args, Path(tmp))
        print(
            f"{'engine':<12} {'beam':>4} {'batch':>5} {'sents':>5} {'sent/s':>8} {'tok/s':>8} "
            f"{'seconds':>8} {'BLEU':>6}"
        )
        for beam in (int(b) for b in args.beams.split(",")):
            for batch_size in (int(b) for b in args.batch_sizes.split(",")):
                n = args.batch1_limit if batch_size == 1 else len(sources)
                for name, translator in translators.items():
                    translator.translate(
                        sources[: min(batch_size, 8)],
                        beam_size=beam,
                        batch_size=batch_size,
                        length_penalty=args.length_penalty,
                    )  # warm-up
                    start = time.perf_counter()
                    outputs = translator.translate(
                        sources[:n], beam_size=beam, batch_size=batch_size, length_penalty=args.length_penalty
                    )
                    seconds = time.perf_counter() - start
                    tokens = sum(len(o.tokens) + 1 for o in outputs)
                    bleu = score_translations([o.text for o in outputs], references[:n])[0]
                    row = {
                        "engine": name,
                        "beam": beam,
                        "batch_size": batch_size,
                        "sentences": n,
                        "sentences_per_s": round(n / seconds, 2),
                        "tokens_per_s": round(tokens / seconds, 1),
                        "seconds": round(seconds, 3),
                        "bleu": round(bleu, 2),
                        "tokens": tokens,
                        "load_average_1": round(os.getloadavg()[0], 2),
                        "outputs_sha1": hashlib.sha1("\n".join(o.text for o in outputs).encode()).hexdigest()[:12],
                    }
                    if name == "nmt":
                        reference_tokens = [o.tokens for o in outputs]
                    elif "nmt" in translators:  # sentences translated token for token as nmt does
                        row["same_as_nmt"] = sum(o.tokens == t for o, t in zip(outputs, reference_tokens))
                    rows.append(row)
                    raw[(name, beam, batch_size)] = seconds
                    print(
                        f"{name:<12} {beam:>4} {batch_size:>5} {n:>5} {row['sentences_per_s']:>8.1f} "
                        f"{row['tokens_per_s']:>8.0f} {seconds:>8.1f} {bleu:>6.2f}",
                        flush=True,
                    )
    ratios = []
    for (name, beam, batch_size), seconds in raw.items():
        if name != "nmt" and ("nmt", beam, batch_size) in raw:
            ratios.append(
                {
                    "engine": name,
                    "beam": beam,
                    "batch_size": batch_size,
                    "speedup_over_nmt": round(raw[("nmt", beam, batch_size)] / seconds, 2),
                }
            )
    print("CTranslate2 / nmt, sentences a second (same sentences, same run):")
    for r in ratios:
        print(f"  {r['engine']:<12} beam {r['beam']} batch {r['batch_size']:>3}: {r['speedup_over_nmt']:.2f}x")
    out = args.out
    out.write_text(
        json.dumps(
            {
                "command": command,
                "commit": git_commit(),
                "date": time.strftime("%Y-%m-%d %H:%M %Z"),
                "checkpoint": args.checkpoint,
                "threads": args.threads,
                "machine": before,
                "load_average_after": [round(x, 2) for x in os.getloadavg()],
                "torch": torch.__version__,
                "ctranslate2": ctranslate2.__version__,
                "length_penalty": args.length_penalty,
                "rows": rows,
                "ratios": ratios,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"(figures in {out})")
    return rows


if __name__ == "__main__":
    main()
