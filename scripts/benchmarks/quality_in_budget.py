"""Quality in a time budget: train a preset M minutes on one core, then its test BLEU.

    python -m scripts.benchmarks.quality_in_budget --name ts_b2048 --core 1 --git-commit -- data.batch_tokens=2048
    python -m scripts.benchmarks.quality_in_budget --preset rnn_bahdanau --name rnn --core 0

Issue 18's quality figures in one command that a later session can repeat:

    taskset -c CORE python -m nmt.train experiment=PRESET data.path=DATA trainer.max_minutes=M
        trainer.max_steps=100000 trainer.val_every=V trainer.keep_last=1000
        trainer.average_last=3 trainer.average_best=3 hydra.run.dir=RUN [overrides]

(OMP_NUM_THREADS=MKL_NUM_THREADS=1), then, on the same core and thread, beam-5
translation of the test set (test_2016_flickr for Multi30k) with best.pt, averaged.pt
and averaged_best.pt, each scored with detokenised cased sacreBLEU and chrF against the
raw references, as `python -m nmt.translate --beam-size 5 --reference` scores them.

Writes OUT/NAME.json (default benchmarks/quality/): the command, date, machine, commit,
precision, updates and minutes, the validation curve (metrics.jsonl), and per checkpoint
its test BLEU, chrF, the steps it holds and the seconds it took to translate. With
--git-commit that file alone is committed the moment it is written (nmt_study's
autocommit), so a run that ends after the session that started it still lands.
The run folder (RUN, default runs/quality/NAME) is git-ignored; an existing one is
refused, so a finished run is never overwritten.

A run that a stop cut short (a session's end, a reboot) continues with the same name:

    python -m scripts.benchmarks.quality_in_budget --name ts_b2048 --core 0 --resume [--git-commit]

It reads the run's settings from RUN/quality_in_budget.json (written when the run
started), trains on from RUN's last checkpoint (trainer.resume=auto) for what is left of
the M minutes (the trainer counts trainer.max_minutes over the whole run, resumptions
added up), or only tests when the training had finished; the record lists each resumption.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from nmt.base.cli_checks import finite_float  # nan and inf refused
from nmt.base.provenance import git_commit
from nmt.store.metrics_log import read_records
from nmt.training.precision import NATIVE_BF16_FLAGS, cpu_flags, read_cpuinfo

from scripts.peers.compare_joeynmt import MULTI30K
from scripts.benchmarks.time_to_quality import machine as ttq_machine, run_pairs
from scripts.out_path import ready_folder

ROOT = Path(__file__).resolve().parents[2]

CHECKPOINTS = ("best.pt", "averaged.pt", "averaged_best.pt")
SETTINGS = {
    "preset": "transformer_small",
    "data": str(MULTI30K),
    "minutes": 105.0,
    "val_every": 300,
    "beam_size": 5,
    "overrides": [],
}  # the run's own, recorded in RUN/quality_in_budget.json
STARTED = "quality_in_budget.json"
CURVE_KEYS = ("step", "bleu", "chrf", "perplexity", "train_seconds")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", help=f"experiment=PRESET (default {SETTINGS['preset']})")
    parser.add_argument("--name", required=True, help="the run's name: RUN and OUT/NAME.json")
    parser.add_argument(
        "--data",
        help=f"data.path (Multi30k folder, default {SETTINGS['data']}); "
        "'none' leaves data.path out (a preset on the toy task)",
    )
    parser.add_argument("--minutes", type=finite_float, help="trainer.max_minutes (default 105)")
    parser.add_argument("--val-every", type=int, help="trainer.val_every (default 300)")
    parser.add_argument("--beam-size", type=int, help="beam of the test translations (default 5)")
    parser.add_argument("--core", type=int, default=0, help="the core both training and testing run on")
    parser.add_argument("--run-dir", help="default runs/quality/NAME")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "quality"), help="folder of NAME.json")
    parser.add_argument("--git-commit", action="store_true", help="commit OUT/NAME.json when it is written")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in RUN that a stop cut short, with the settings it started with",
    )
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="more Hydra overrides of the run")
    args = parser.parse_args(argv)
    args.run_dir = Path(args.run_dir or ROOT / "runs" / "quality" / args.name)
    given = [key for key in SETTINGS if getattr(args, key) not in (None, [])]
    if args.resume:
        if given:
            parser.error(
                f"--resume continues a run with the settings it started with; leave out "
                f"{', '.join('--' + k.replace('_', '-') if k != 'overrides' else 'the overrides' for k in given)}"
            )
        started = args.run_dir / STARTED
        if not started.is_file():
            parser.error(f"--resume: {started} not found; no run of that name was started here")
        try:
            recorded = json.loads(started.read_text())
            for key in SETTINGS:
                setattr(args, key, recorded["settings"][key])
        except (ValueError, KeyError, TypeError) as error:
            parser.error(f"--resume: {started} is not a record this script wrote ({error!r})")
        args.started = recorded
    else:
        for key, default in SETTINGS.items():
            if getattr(args, key) is None:
                setattr(args, key, default)
        args.started = None
    if args.minutes <= 0 or args.val_every < 1 or args.beam_size < 1:
        parser.error("--minutes, --val-every and --beam-size must be positive")
    return args


def train_command(args) -> list[str]:
    data = [] if args.data == "none" else [f"data.path={args.data}"]
    return [
        sys.executable,
        "-m",
        "nmt.train",
        f"experiment={args.preset}",
        *data,
        f"trainer.max_minutes={args.minutes:g}",
        "trainer.max_steps=100000",
        f"trainer.val_every={args.val_every}",
        "trainer.keep_last=1000",
        "trainer.average_last=3",
        "trainer.average_best=3",
        f"hydra.run.dir={args.run_dir}",
        *args.overrides,
        *(["trainer.resume=auto"] if args.started else []),
    ]


def one_core_env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TQDM_DISABLE": "1"}


def test_scores(checkpoint: Path, pairs: list[tuple[str, str]], beam_size: int) -> dict:
    """BLEU, chrF, signature, the steps the checkpoint holds and seconds to translate."""
    from nmt.store.checkpoints import load_checkpoint
    from nmt.base.scoring import score_translations
    from nmt.translator import Translator

    translator = Translator.from_checkpoint(checkpoint, device="cpu")
    started = time.perf_counter()
    outputs = translator.translate([src for src, _ in pairs], beam_size=beam_size)
    seconds = time.perf_counter() - started
    bleu, chrf, signature, _ = score_translations([o.text for o in outputs], [tgt for _, tgt in pairs])
    progress = load_checkpoint(checkpoint, mmap=True).get("progress") or {}  # averaged: summary.json says
    return {
        "bleu": bleu,
        "chrf": chrf,
        "bleu_signature": signature,
        "steps": [progress.get("step")],
        "translate_seconds": round(seconds, 1),
    }


def averaged_steps(summary: dict) -> dict[str, list[int]]:
    """The steps averaged.pt and averaged_best.pt hold, from summary.json."""
    return {"averaged.pt": summary.get("averaged_steps"), "averaged_best.pt": summary.get("averaged_best_steps")}


def machine() -> dict:
    """time_to_quality's machine record, and whether the CPU multiplies bf16 natively
    (what trainer.precision=auto decides on)."""
    flags = cpu_flags(read_cpuinfo())
    return {**ttq_machine(), "native_bf16": bool(flags & set(NATIVE_BF16_FLAGS))}


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.run_dir.exists() and not args.resume:
        sys.exit(
            f"{args.run_dir} exists: a run of that name was started; continue it with --resume, "
            "or choose another --name or --run-dir"
        )
    out = ready_folder(args.out, "quality_in_budget")
    if args.git_commit:
        from nmt.base.errors import NmtError
        from nmt_study.autocommit import work_tree_of

        try:
            work_tree_of(out)
        except NmtError as error:
            sys.exit(str(error))
    command = "python -m scripts.benchmarks.quality_in_budget " + shlex.join(sys.argv[1:] if argv is None else argv)
    train = ["taskset", "-c", str(args.core), *train_command(args)]
    now, commit = datetime.now(), git_commit()  # the code that runs, before any autocommit
    if args.started is None:
        started = {
            "command": command,
            "date": now.isoformat(timespec="seconds"),
            "commit": commit,
            "settings": {key: getattr(args, key) for key in SETTINGS},
            "resumed": [],
        }
    else:
        started = args.started
        started.setdefault("resumed", []).append(
            {"command": command, "date": now.isoformat(timespec="seconds"), "commit": commit}
        )
    args.run_dir.mkdir(parents=True, exist_ok=True)
    (args.run_dir / STARTED).write_text(json.dumps(started, indent=1) + "\n")
    if (args.run_dir / "summary.json").is_file():
        print(f"{now:%H:%M:%S} {args.run_dir} finished its training: testing only", flush=True)
    else:
        print(f"{now:%H:%M:%S} training: {shlex.join(train)}", flush=True)
        done = subprocess.run(train, cwd=ROOT, env=one_core_env())
        if done.returncode:
            sys.exit(
                f"training failed ({done.returncode}); its log: {args.run_dir / 'train.log'}"
                + ("" if args.resume else f"; continue it with --name {args.name} --resume")
            )

    import torch

    os.sched_setaffinity(0, {args.core})
    torch.set_num_threads(1)
    summary = json.loads((args.run_dir / "summary.json").read_text())
    pairs = run_pairs(args.run_dir, "test")
    tests = {}
    for name in CHECKPOINTS:
        path = args.run_dir / "checkpoints" / name
        if path.is_file():
            tests[name] = test_scores(path, pairs, args.beam_size)
            print(f"{name}: test BLEU {tests[name]['bleu']:.2f} chrF {tests[name]['chrf']:.2f}", flush=True)
    for name, steps in averaged_steps(summary).items():
        if name in tests and steps:
            tests[name]["steps"] = steps
    from nmt.training.precision import resolve_precision
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(args.run_dir / ".hydra" / "config.yaml")
    record = {
        "command": started["command"],
        "train_command": shlex.join(train),
        "date": started["date"],
        "machine": machine(),
        "commit": started["commit"],
        "resumed": started["resumed"],
        "preset": args.preset,
        "overrides": args.overrides,
        "precision": resolve_precision(str(cfg.trainer.precision), torch.device("cpu")),
        "minutes": args.minutes,
        "updates": summary["step"],
        "train_seconds": summary["train_seconds"],
        "wall_seconds": summary["wall_s"],
        "test_sentences": len(pairs),
        "beam_size": args.beam_size,
        "validation": [{key: r.get(key) for key in CURVE_KEYS} for r in read_records(args.run_dir)],
        "best_validation_bleu": summary["best"] if summary.get("metric") == "bleu" else None,
        "test": tests,
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{args.name}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"written {path}", flush=True)
    if args.git_commit:
        from nmt_study.autocommit import commit_record

        best = tests.get("best.pt", {}).get("bleu")
        print(
            commit_record(
                out,
                path,
                f"quality_in_budget {args.name}: {args.preset} {' '.join(args.overrides)}, "
                f"{args.minutes:g} min, {summary['step']} updates, test BLEU best.pt "
                + (f"{best:.2f}" if best is not None else "none"),
            ),
            flush=True,
        )
    return record


if __name__ == "__main__":
    main()
