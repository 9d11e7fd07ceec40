"""How good are the study's silver links? eflomal's recipe where the truth is
known, two eflomal runs against each other, and the baselines on both.

    python -m scripts.benchmarks.eflomal_quality --data ../shared/data/multi30k --out benchmarks/attention_study/eflomal_quality.json

1. Toy task: the study's recipe (nmt_study.eflomal_links: eflomal on the
   training pairs plus the test pairs, both directions, grow-diag-final-and)
   on the toy corpus the study trains on, scored against the true links.
2. Multi30k: the recipe run twice; the second run's test links scored
   against the first's and against the committed test.links (eflomal
   samples without a seed, so runs differ).
3. Both: the diagonal, same-position and one-link-floor baselines
   (nmt_study.baselines) against the reference links.
Prints each figure with the command and writes them as JSON.
"""

import argparse
import json
import shlex
import sys
import time
from argparse import Namespace
from pathlib import Path
from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]


def figures(counts) -> dict:
    return {
        "aer": round(counts.aer, 4),
        "precision": round(counts.precision, 4),
        "recall": round(counts.recall, 4),
        "links": counts.predicted,
        "reference_links": counts.sure,
    }


def score(predicted: list[set], reference: list[set]):
    from nmt_study.alignment import AerCounts

    total = AerCounts()
    for a, s in zip(predicted, reference):
        total += AerCounts.of(a, s)
    return total


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "multi30k"), help="Multi30k folder")
    parser.add_argument(
        "--links",
        default=str(ROOT / "benchmarks/attention_study/multi30k/test.links"),
        help="the committed Multi30k test links",
    )
    parser.add_argument("--cache-dir", default=None, help="sentencepiece cache (cache_dir)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/attention_study/eflomal_quality.json"))
    args = parser.parse_args(argv)
    args.out = ready_file(args.out, "eflomal_quality")
    command = "python -m scripts.benchmarks.eflomal_quality " + shlex.join(sys.argv[1:] if argv is None else argv)
    from nmt_study.__main__ import load_pairs
    from nmt_study.alignment import read_links, toy_links
    from nmt_study.baselines import baseline_counts
    from nmt_study.eflomal_links import eflomal_links

    result = {"command": command, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    train, test = load_pairs(
        Namespace(data="toy", data_path=None, cache_dir=args.cache_dir, test_sentences=None), split="train"
    )
    truth = [toy_links(s, t) for s, t in test]
    started = time.perf_counter()
    found = eflomal_links(train + test)[len(train) :]
    result["toy"] = {
        "train_pairs": len(train),
        "test_pairs": len(test),
        "eflomal_vs_truth": figures(score(found, truth)),
        "seconds": round(time.perf_counter() - started, 1),
        "baselines_vs_truth": {k: figures(v) for k, v in baseline_counts(test, truth).items()},
    }
    print(f"toy: eflomal's recipe against the true links: {result['toy']['eflomal_vs_truth']}", flush=True)

    study = Namespace(data="multi30k", data_path=args.data, cache_dir=args.cache_dir, test_sentences=None)
    train, test = load_pairs(study, split="train")
    train = [(s, t) for s, t in train if s.strip() and t.strip()]
    committed = [read_links(line) for line in Path(args.links).read_text(encoding="utf-8").splitlines()]
    runs = [eflomal_links(train + test)[len(train) :] for _ in range(2)]
    result["multi30k"] = {
        "test_pairs": len(test),
        "run2_vs_run1": figures(score(runs[1], runs[0])),
        "run1_vs_committed": figures(score(runs[0], committed)),
        "run2_vs_committed": figures(score(runs[1], committed)),
        "baselines_vs_committed": {k: figures(v) for k, v in baseline_counts(test, committed).items()},
        "target_words": sum(len(t.split()) for _, t in test),
        "unlinked_target_words": sum(len(t.split()) - len({j for _, j in s}) for (_, t), s in zip(test, committed)),
    }
    print(f"multi30k: {json.dumps(result['multi30k'])}", flush=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"{command}\n(figures in {args.out})")
    return result


if __name__ == "__main__":
    main()
