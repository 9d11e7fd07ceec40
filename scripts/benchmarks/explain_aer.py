"""Which explanation aligns best? AER of attention and of each nmt.explain
method against Multi30k's reference word links, one checkpoint.

    python -m scripts.benchmarks.explain_aer --checkpoint RUN/checkpoints/best.pt --limit 200
    python -m scripts.benchmarks.explain_aer --model multi30k-de-en      (the model shipped with nmt)

The model reads each test pair's reference (teacher forcing, as the study's
AER does: nmt_study.metrics.forced_attention); every method gives a map
(T+1, S) whose row t is about target subword t (row T: </s>). Each map is
read as an alignment the study's way (nmt.data.word_alignment: each target
subword links to its row's peak, word links are the union over pieces) and
scored with Och and Ney's AER, summed over sentences; "one step later"
reads target subword t from row t+1 (Shift-Att, Chen et al. 2020). Pairs
whose pieces do not split into their whitespace words are skipped, as the
study skips them. Prints the table and the command, writes the record (--out).
"""

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

from nmt import cpu_description, read_cpuinfo
from scripts.benchmarks.bench_decode import read_lines
from scripts.out_path import ready_file
from scripts.peers.compare_joeynmt import MULTI30K  # the shared data beside the checkout

ROOT = Path(__file__).resolve().parents[2]
LINKS = ROOT / "benchmarks" / "attention_study" / "multi30k" / "test.links"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--checkpoint", help="a .pt file written by nmt.train")
    model.add_argument("--model", help="a model shipped with nmt (nmt.pretrained), e.g. multi30k-de-en")
    parser.add_argument("--data", default=str(MULTI30K), help="folder with test_2016_flickr.{de,en}[.gz]")
    parser.add_argument("--links", default=str(LINKS), help="Pharaoh links of the test pairs, one line each")
    parser.add_argument("--limit", type=int, default=1000, help="the first N test pairs")
    parser.add_argument("--methods", default=None, help="comma-separated (default: every method the model has)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "explain_aer.json"))
    return parser.parse_args(argv)


def maps_of(adapter, pair, methods: list[str], seconds: dict) -> dict:
    """method -> (T+1, S) numpy map of one pair; "attention": the shown attention
    (RNN: its attention; Transformer: last layer, mean of heads)."""
    from nmt.explain import explain_pair

    start = time.perf_counter()
    cross = adapter.attentions(pair).cross
    maps = {"attention": cross[-1].float().mean(0).cpu().numpy()}
    seconds["attention"] = seconds.get("attention", 0.0) + time.perf_counter() - start
    for method in methods:
        start = time.perf_counter()
        result = explain_pair(adapter, pair, method)
        maps[method] = result.scores[-1].mean(0)                 # last layer, mean of heads: (T+1, S)
        seconds[method] = seconds.get(method, 0.0) + time.perf_counter() - start
    return maps


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out = ready_file(args.out, "explain_aer")
    command = "python -m scripts.benchmarks.explain_aer " + shlex.join(sys.argv[1:] if argv is None else argv)
    import torch

    from nmt.base.provenance import git_commit
    from nmt.data.word_alignment import AerCounts, attention_word_links, read_links
    from nmt.explain import METHODS
    from nmt.explain.models import model_of
    from nmt.translator import Translator
    from nmt_study.alignment import words_match

    torch.set_num_threads(1)
    folder = Path(args.data)
    sources = read_lines(folder, "test_2016_flickr.de")[: args.limit]
    references = read_lines(folder, "test_2016_flickr.en")[: args.limit]
    links = [read_links(line) for line in Path(args.links).read_text(encoding="utf-8").splitlines()][: args.limit]
    translator = (Translator.pretrained(args.model, device="cpu") if args.model
                  else Translator.from_checkpoint(args.checkpoint, device="cpu"))
    adapter, tok = model_of(translator), translator.tokenizer
    methods = args.methods.split(",") if args.methods else [
        m for m in METHODS if m != "rollout" or adapter.transformer_decoder]
    counts = {name: {"direct": AerCounts(), "shift": AerCounts()} for name in ["attention", *methods]}
    seconds, skipped, used = {}, 0, 0
    print(f"{command}\ncommit {git_commit()}, torch {torch.__version__}, 1 thread, {cpu_description(read_cpuinfo())}")
    for number, ((source, reference), sure) in enumerate(zip(zip(sources, references), links), 1):
        src = tok.encode_src(source)[: translator.max_src_len] or [tok.unk_id]
        tgt = tok.encode_tgt(reference)
        if translator.max_tgt_len:
            tgt = tgt[: translator.max_tgt_len - 1]
        src_pieces, tgt_pieces = tok.src_pieces(src), tok.tgt_pieces(tgt)
        if not tgt or not (words_match(src_pieces, source) and words_match(tgt_pieces, reference)):
            skipped += 1
            continue
        used += 1
        for name, weights in maps_of(adapter, adapter.pair_of_ids(src, tgt), methods, seconds).items():
            counts[name]["direct"] += AerCounts.of(attention_word_links(weights[:-1], src_pieces, tgt_pieces), sure)
            counts[name]["shift"] += AerCounts.of(attention_word_links(weights[1:], src_pieces, tgt_pieces), sure)
        if number % 50 == 0:
            print(f"  {number} pairs, {sum(seconds.values()):.0f} s", flush=True)
    rows = [{"method": name, "aer": c["direct"].aer, "precision": c["direct"].precision, "recall": c["direct"].recall,
             "aer_shift": c["shift"].aer, "seconds_per_pair": seconds.get(name, 0.0) / max(used, 1),
             "counts": c["direct"].to_list(), "counts_shift": c["shift"].to_list()} for name, c in counts.items()]
    print(f"\n{used} test pairs scored ({skipped} skipped: pieces that do not split into words)\n")
    print("| map | AER | precision | recall | AER one step later | seconds a pair |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['method']} | {row['aer']:.3f} | {row['precision']:.3f} | {row['recall']:.3f} | "
              f"{row['aer_shift']:.3f} | {row['seconds_per_pair']:.3f} |")
    record = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": command, "commit": git_commit(),
              "cpu": cpu_description(read_cpuinfo()), "threads": 1, "torch": torch.__version__, "checkpoint": args.checkpoint or f"--model {args.model}",
              "model": translator.model.__class__.__name__, "pairs": used, "skipped": skipped,
              "links": Path(args.links).name, "rows": rows}
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return record


if __name__ == "__main__":
    from nmt import NmtError

    try:
        main()
    except NmtError as error:        # a missing or unknown model, a checkpoint nmt refuses: one line
        sys.exit(f"explain_aer: {error}")
