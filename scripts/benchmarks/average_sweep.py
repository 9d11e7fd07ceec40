"""How many checkpoints to average: each choice scored on validation, the chosen one on test.

    python -m scripts.benchmarks.average_sweep runs/quality/ts_b2048 --last 2 3 4 5 6 8 --best 3 5 --core 1

Checkpoint averaging (Vaswani et al. 2017, Sec. 6.1) takes the last few checkpoints of a run;
how many is a choice, and the test set must not make it. For each N of --last (the N newest
step_N.pt, as trainer.average_last=N) and of --best (the N best-validated, as
trainer.average_best=N), nmt.average's mean of those checkpoints is scored the way the
trainer validates (greedy search, the run's whole validation set, detokenised cased
sacreBLEU). The average with the highest validation BLEU is then translated from the test
set with beam --beam-size and scored the same way, beside best.pt, so that the figure is
the one a user would have picked without seeing the test set.

Writes OUT (default RUN/average_sweep.json): the command, the commit, every choice with the
steps it holds and its validation BLEU, the chosen one, and the test BLEU and chrF of it and
of best.pt. On one core (--core), one thread, as the quality runs.
"""

import argparse
import json
import os
import shlex
import sys
import tempfile
from datetime import datetime
from pathlib import Path

from nmt.base.provenance import git_commit

from scripts.benchmarks.quality_in_budget import test_scores
from scripts.benchmarks.time_to_quality import run_pairs, score_checkpoint
from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path, help="a run folder of python -m nmt.train that kept its step_N.pt")
    parser.add_argument("--last", type=int, nargs="*", default=[], metavar="N", help="average the N newest")
    parser.add_argument("--best", type=int, nargs="*", default=[], metavar="N", help="average the N best-validated")
    parser.add_argument("--beam-size", type=int, default=5, help="beam of the test translations")
    parser.add_argument("--core", type=int, help="pin to this core (default: not pinned)")
    parser.add_argument("--out", type=Path, help="default RUN/average_sweep.json")
    args = parser.parse_args(argv)
    if not args.last and not args.best:
        parser.error("give --last N ... and/or --best N ...")
    if any(n < 1 for n in [*args.last, *args.best]) or args.beam_size < 1:
        parser.error("N and --beam-size must be positive")
    if not (args.run / "metrics.jsonl").is_file():
        parser.error(f"{args.run} is not a run folder of python -m nmt.train (no metrics.jsonl)")
    args.out = ready_file(args.out or args.run / "average_sweep.json", "average_sweep")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    import torch

    from nmt.store.averaging import average_checkpoints, run_checkpoints
    from nmt.base.errors import NmtError
    from nmt.store.checkpoints import save_checkpoint, step_of

    if args.core is not None:
        os.sched_setaffinity(0, {args.core})
    torch.set_num_threads(1)
    command = "python -m scripts.benchmarks.average_sweep " + shlex.join(sys.argv[1:] if argv is None else argv)
    valid, test = run_pairs(args.run, "valid"), run_pairs(args.run, "test")
    choices = []
    with tempfile.TemporaryDirectory() as scratch:
        for kind, sizes in (("last", args.last), ("best", args.best)):
            for n in sizes:
                try:
                    paths = run_checkpoints(
                        args.run, n if kind == "best" else None, n if kind == "last" else None, None
                    )
                except NmtError as error:
                    sys.exit(f"average_sweep: {error}")
                path = Path(scratch) / f"{kind}{n}.pt"
                save_checkpoint(average_checkpoints(paths), path)
                bleu, signature = score_checkpoint(path, valid)
                choice = {"kind": kind, "n": n, "steps": [step_of(p) for p in paths], "valid_bleu": bleu}
                choices.append(choice)
                print(
                    f"{kind} {n} (steps {', '.join(map(str, choice['steps']))}): validation BLEU {bleu:.2f}", flush=True
                )
        chosen = max(choices, key=lambda c: c["valid_bleu"])
        path = Path(scratch) / f"{chosen['kind']}{chosen['n']}.pt"
        tests = {"chosen": test_scores(path, test, args.beam_size)}
        best = args.run / "checkpoints" / "best.pt"
        if best.is_file():
            tests["best.pt"] = test_scores(best, test, args.beam_size)
    tests["chosen"]["steps"] = chosen["steps"]
    for name, scores in tests.items():
        print(f"{name}: test BLEU {scores['bleu']:.2f} chrF {scores['chrf']:.2f} (beam {args.beam_size})", flush=True)
    record = {
        "command": command,
        "date": datetime.now().isoformat(timespec="seconds"),
        "commit": git_commit(),
        "run": str(args.run),
        "valid_sentences": len(valid),
        "valid_signature": signature,
        "test_sentences": len(test),
        "beam_size": args.beam_size,
        "choices": choices,
        "chosen": {"kind": chosen["kind"], "n": chosen["n"]},
        "test": tests,
    }
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"written {args.out}", flush=True)
    return record


if __name__ == "__main__":
    from nmt.base.errors import NmtError

    try:
        main()
    except (NmtError, OSError) as error:  # a broken checkpoint, an unknown --core: one line
        sys.exit(f"average_sweep: {error}")
