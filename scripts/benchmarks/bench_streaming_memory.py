"""Peak memory of data=files_streaming against corpus size.

    python -m scripts.benchmarks.bench_streaming_memory --sizes 200000 2000000

For each size, writes a synthetic parallel corpus of that many pairs to a
temporary folder, then in fresh processes (so each peak is its own):

    vocabulary  Tokenizer.train_sampled: sentencepiece samples --spm-sentences
                sentences while the files stream by
    epoch       StreamingBatcher over the files with the cached vocabulary:
                one whole epoch of token-budget batches (encoding, bucketing
                in a --buffer-pairs buffer, padding into tensors)
    in memory   (sizes in --in-memory-sizes only) the same epoch the way
                data=files does it: every pair read, encoded and held

and prints the peak resident set size (ru_maxrss) of each, with the
process's RSS after its imports for reference. A bounded loader's peaks
stay the same when the corpus grows tenfold.
"""

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def write_corpus(folder: Path, n_pairs: int, seed: int = 0) -> tuple[Path, Path]:
    """n_pairs synthetic sentence pairs, 3 to 40 words from a Zipf-like lexicon of
    20,000 made-up words; the target spells each source word backwards, in reverse order."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bcdfghklmnprstvwz" for v in "aeiou"]
    lexicon = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(20_000)]
    weights = [1.0 / (rank + 1) for rank in range(len(lexicon))]
    src_path, tgt_path = folder / "train.src", folder / "train.tgt"
    with open(src_path, "w", encoding="utf-8") as src, open(tgt_path, "w", encoding="utf-8") as tgt:
        for _ in range(0, n_pairs, 10_000):
            chunk = min(10_000, n_pairs - _)
            words = rng.choices(lexicon, weights, k=chunk * 40)
            for i in range(chunk):
                sentence = words[i * 40 : i * 40 + rng.randint(3, 40)]
                src.write(" ".join(sentence) + "\n")
                tgt.write(" ".join(w[::-1] for w in reversed(sentence)) + "\n")
    return src_path, tgt_path


def rss_kib() -> int:
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("VmRSS:"))


def child(args) -> None:
    """One measurement in this fresh process; prints one JSON line."""
    from nmt.data.batching import TokenBatcher
    from nmt.data.examples import encode_train
    from nmt.data.readers import read_parallel
    from nmt.data.streaming import StreamingBatcher, fingerprint, iter_lines
    from nmt.data.tokenizer import Tokenizer

    folder = Path(args.child)
    src, tgt = folder / "train.src", folder / "train.tgt"
    after_imports = rss_kib()
    started = time.perf_counter()
    tokenizer = Tokenizer.train_sampled(
        lambda: iter_lines(src),
        lambda: iter_lines(tgt),
        fingerprint(src, tgt),
        args.vocab_size,
        "unigram",
        True,
        folder / "cache",
        args.spm_sentences,
    )
    batches = tokens = pairs = 0
    if args.phase == "epoch":
        batcher = StreamingBatcher(src, tgt, tokenizer, args.batch_tokens, args.max_len, args.buffer_pairs, seed=1)
        for batch in batcher.batches(0):
            batches, tokens, pairs = batches + 1, tokens + batch.n_tgt_tokens, pairs + len(batch)
    elif args.phase == "in_memory":
        encoded = encode_train(read_parallel(src, tgt), tokenizer, args.max_len)
        for batch in TokenBatcher(encoded.examples, args.batch_tokens, shuffle=True, seed=1).batches(0):
            batches, tokens, pairs = batches + 1, tokens + batch.n_tgt_tokens, pairs + len(batch)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(
        json.dumps(
            {
                "phase": args.phase,
                "after_imports_mib": after_imports / 1024,
                "peak_rss_mib": peak / 1024,
                "seconds": time.perf_counter() - started,
                "batches": batches,
                "pairs": pairs,
                "tgt_tokens": tokens,
                "vocab_reused": tokenizer.reused,
            }
        )
    )


def measure(folder: Path, phase: str, args) -> dict:
    command = [
        sys.executable,
        "-m",
        "scripts.benchmarks.bench_streaming_memory",
        "--child",
        str(folder),
        "--phase",
        phase,
        "--buffer-pairs",
        str(args.buffer_pairs),
        "--batch-tokens",
        str(args.batch_tokens),
        "--vocab-size",
        str(args.vocab_size),
        "--spm-sentences",
        str(args.spm_sentences),
        "--max-len",
        str(args.max_len),
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"))
    if done.returncode:
        raise SystemExit(f"{phase} on {folder} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 2_000_000])
    parser.add_argument(
        "--in-memory-sizes",
        type=int,
        nargs="*",
        default=[200_000],
        help="also load these sizes fully in memory, as data=files does",
    )
    parser.add_argument("--buffer-pairs", type=int, default=100_000)
    parser.add_argument("--batch-tokens", type=int, default=4096)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--spm-sentences", type=int, default=200_000)
    parser.add_argument("--max-len", type=int, default=100)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--phase", default="vocabulary", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    print(f"command: python -m scripts.benchmarks.bench_streaming_memory {' '.join(sys.argv[1:])}".rstrip())
    print(
        f"buffer_pairs={args.buffer_pairs} batch_tokens={args.batch_tokens} "
        f"vocab_size={args.vocab_size} spm_sentences={args.spm_sentences}"
    )
    print("| pairs | corpus MiB | phase | peak RSS MiB | RSS after imports MiB | seconds | batches |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    results = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="nmt-stream-") as tmp:
            folder = Path(tmp)
            src, tgt = write_corpus(folder, size)
            corpus_mib = (src.stat().st_size + tgt.stat().st_size) / 2**20
            phases = ["vocabulary", "epoch"] + (["in_memory"] if size in args.in_memory_sizes else [])
            for phase in phases:
                r = dict(measure(folder, phase, args), pairs_in_corpus=size, corpus_mib=corpus_mib)
                results.append(r)
                print(
                    f"| {size:,} | {corpus_mib:.0f} | {phase} | {r['peak_rss_mib']:.0f} | "
                    f"{r['after_imports_mib']:.0f} | {r['seconds']:.0f} | {r['batches']:,} |",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
