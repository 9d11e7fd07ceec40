"""Decoding speed of a checkpoint on test_2016_flickr: greedy and beam search
at several batch sizes, on the CPU and, when one is visible, a CUDA GPU.

    python -m scripts.benchmarks.bench_decode --checkpoint runs/m30k_transformer_small/checkpoints/best.pt --data ../shared/data/multi30k

For every (device, search, batch size) the first --limit test sentences go
through nmt.Translator.translate once untimed on a few sentences (warm-up),
then once timed; it prints sentences/s, output tokens/s (subwords + eos) and
the BLEU of those sentences (sacreBLEU, as nmt.translate reports it), and
writes them as JSON (--out).
"""

import argparse
import gzip
import json
import shlex
import sys
import time
from pathlib import Path

import torch

from scripts.peers.compare_joeynmt import MULTI30K  # the shared data beside the checkout
from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a .pt file written by nmt.train")
    parser.add_argument("--data", default=str(MULTI30K), help="folder with test_2016_flickr.{de,en}[.gz]")
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--src-lang", default="de")
    parser.add_argument("--tgt-lang", default="en")
    parser.add_argument("--beams", default="1,5", help="beam sizes, 1 = greedy")
    parser.add_argument("--batch-sizes", default="1,16,64")
    parser.add_argument("--devices", default="auto", help="auto (cpu, and cuda when visible) or a list: cpu,cuda")
    parser.add_argument("--limit", type=int, default=1000, help="first N sentences of the split")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "bench_decode.json"))
    return parser.parse_args(argv)


def read_lines(folder: Path, stem: str) -> list[str]:
    for name in (stem, stem + ".gz"):
        path = folder / name
        if path.is_file():
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as handle:
                return handle.read().splitlines()
    sys.exit(f"{folder}/{stem}[.gz] not found; pass --data")


def main(argv=None) -> list[dict]:
    args = parse_args(argv)
    args.out = ready_file(args.out, "bench_decode")
    command = "python -m scripts.benchmarks.bench_decode " + shlex.join(sys.argv[1:] if argv is None else argv)
    from nmt.base.provenance import git_commit
    from nmt.base.scoring import score_translations
    from nmt.translator import Translator

    folder = Path(args.data)
    sources = read_lines(folder, f"{args.split}.{args.src_lang}")[: args.limit]
    references = read_lines(folder, f"{args.split}.{args.tgt_lang}")[: args.limit]
    devices = args.devices.split(",")
    if devices == ["auto"]:
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows = []
    print(
        f"{command}\ncommit {git_commit()}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{len(sources)} sentences of {args.split}"
    )
    print(f"{'device':<6} {'beam':>4} {'batch':>5} {'sent/s':>8} {'tok/s':>8} {'seconds':>8} {'BLEU':>6}")
    for device in devices:
        translator = Translator.from_checkpoint(args.checkpoint, device=device)
        for beam in (int(b) for b in args.beams.split(",")):
            for batch_size in (int(b) for b in args.batch_sizes.split(",")):
                translator.translate(sources[:batch_size], beam_size=beam, batch_size=batch_size)  # warm-up
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                start = time.perf_counter()
                outputs = translator.translate(sources, beam_size=beam, batch_size=batch_size)
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                seconds = time.perf_counter() - start
                tokens = sum(len(o.tokens) + 1 for o in outputs)
                bleu = score_translations([o.text for o in outputs], references)[0]
                row = {
                    "device": device,
                    "beam": beam,
                    "batch_size": batch_size,
                    "sentences_per_s": round(len(sources) / seconds, 2),
                    "tokens_per_s": round(tokens / seconds, 1),
                    "seconds": round(seconds, 2),
                    "bleu": round(bleu, 2),
                }
                rows.append(row)
                print(
                    f"{device:<6} {beam:>4} {batch_size:>5} {row['sentences_per_s']:>8.1f} "
                    f"{row['tokens_per_s']:>8.0f} {seconds:>8.1f} {bleu:>6.2f}",
                    flush=True,
                )
    Path(args.out).write_text(
        json.dumps(
            {
                "command": command,
                "commit": git_commit(),
                "date": time.strftime("%Y-%m-%d %H:%M"),
                "checkpoint": args.checkpoint,
                "sentences": len(sources),
                "threads": torch.get_num_threads(),
                "rows": rows,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"(figures in {args.out})")
    return rows


if __name__ == "__main__":
    main()
