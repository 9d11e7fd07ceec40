"""python -m nmt.study: train every attention configuration on one budget, then report.

    python -m nmt.study --data-path ../shared/data/multi30k --budget-minutes 2 --seeds 1
    python -m nmt.study --data toy --budget-steps 40 --only bahdanau,luong_dot --out /tmp/study
    python -m nmt.study --report-only            # rewrite the report from the run folders

Each configuration and seed is one `python -m nmt.train` process (a failure
is recorded and the study goes on); finished runs are not trained again.
`study.KEY=VALUE` arguments are accepted for the options (study.budget_minutes=2,
study.seeds=2); any other KEY=VALUE is passed to every training run.
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

from nmt.errors import NmtError
from nmt.study.configs import FAMILIES, PROFILES, select, study_configs

ROOT = Path(__file__).resolve().parents[2]


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m nmt.study", description=__doc__.split("\n")[0])
    parser.add_argument("--data", choices=sorted(PROFILES), default="multi30k")
    parser.add_argument("--data-path", help="local Multi30k folder (data.path); default: the hub copy")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--budget-minutes", type=float, help="wall-clock minutes per run (default 2)")
    budget.add_argument("--budget-steps", type=int, help="optimiser steps per run instead of minutes")
    parser.add_argument("--seeds", type=int, default=1, help="seeds per configuration (1, 2, ...)")
    parser.add_argument("--spread", default="",
                        help="configurations that also get a second seed, to estimate the spread")
    parser.add_argument("--only", help="comma-separated configurations or families (see --list)")
    parser.add_argument("--runs-dir", type=Path, help="run folders (default runs/attention_study/DATA)")
    parser.add_argument("--out", type=Path, help="where README.md, the CSV files and the pictures go "
                        "(default benchmarks/attention_study, its toy/ folder for --data toy)")
    parser.add_argument("--val-sentences", type=int, default=300, help="validation sentences during training")
    parser.add_argument("--val-every", type=int, default=100, help="steps between validations")
    parser.add_argument("--test-sentences", type=int, help="first N test sentences (default all)")
    parser.add_argument("--beam-size", type=int, default=1, help="test decoding beam (1 = greedy)")
    parser.add_argument("--cache-dir", help="sentencepiece cache (cache_dir); default data/")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads per run (1 is fastest for these small models on a busy CPU)")
    parser.add_argument("--machine", help="how the report names this machine")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the report")
    parser.add_argument("--list", action="store_true", help="print the configurations and exit")
    parser.add_argument("overrides", nargs="*", help="study.KEY=VALUE, or KEY=VALUE for every run")
    args = parser.parse_args(argv)
    extra = []
    for item in args.overrides:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"{item!r}: expected KEY=VALUE")
        if key.startswith("study."):
            option = key[len("study."):]
            if option not in {"budget_minutes", "budget_steps", "seeds", "only", "spread", "data",
                              "data_path", "val_sentences", "val_every", "test_sentences", "beam_size"}:
                parser.error(f"{key} unknown; study options are the --long options with _ for -")
            kind = {"budget_minutes": float, "budget_steps": int, "seeds": int, "val_sentences": int,
                    "val_every": int, "test_sentences": int, "beam_size": int}.get(option, str)
            setattr(args, option, kind(value))
        else:
            extra.append(item)
    args.overrides = extra
    if args.budget_minutes and args.budget_steps:
        parser.error("give study.budget_minutes or study.budget_steps, not both")
    if not args.budget_minutes and not args.budget_steps:
        args.budget_minutes = 2.0
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    args.runs_dir = args.runs_dir or Path("runs/attention_study") / args.data
    args.out = args.out or Path("benchmarks/attention_study") / ("toy" if args.data == "toy" else "")
    return args


def data_overrides(args) -> list[str]:
    if args.data == "toy":
        return ["data=toy"]
    return ["data=multi30k"] + ([f"data.path={Path(args.data_path).resolve()}"] if args.data_path else [])


def common_overrides(args) -> list[str]:
    sizes = PROFILES[args.data]
    budget = ([f"trainer.max_minutes={args.budget_minutes}", "trainer.max_steps=1000000"]
              if args.budget_minutes else [f"trainer.max_steps={args.budget_steps}"])
    return [*data_overrides(args), f"data.vocab_size={sizes.vocab_size}",
            f"data.batch_tokens={sizes.batch_tokens}", *budget, f"trainer.val_every={args.val_every}",
            f"trainer.val_max_sentences={args.val_sentences}", "trainer.keep_last=0",
            "trainer.heatmap_sentences=0", "trainer.log_every=50", "trainer.metric=bleu",
            "trainer.patience=0", f"trainer.label_smoothing={sizes.label_smoothing}",
            *([f"cache_dir={args.cache_dir}"] if args.cache_dir else []), *args.overrides]


def git_commit() -> str:
    def git(*cmd):
        return subprocess.run(["git", *cmd], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "nmt", "configs")
    return commit + (" (with uncommitted changes under nmt/ or configs/)" if dirty else "")


def default_machine() -> str:
    return f"{os.cpu_count()}-core CPU ({platform.machine()}, {platform.system()}), no GPU"


def load_pairs(args):
    """(validation pairs, test pairs) of the study's data, raw text."""
    from hydra import compose, initialize_config_dir

    from nmt.data.corpora import load_corpus

    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose("config", overrides=data_overrides(args))
    corpus = load_corpus(cfg.data, Path(args.cache_dir or cfg.cache_dir))
    valid = [(s, t) for s, t in corpus.valid if s.strip()]
    test = [(s, t) for s, t in corpus.test if s.strip()]
    if args.test_sentences:
        test = test[: args.test_sentences]
    if not test:
        raise NmtError(f"{corpus.name} has no test set; the study reports test BLEU")
    return valid, test


def _data_path_of(settings: dict) -> str | None:
    """The --data-path of the command a study was run with (older study.json files)."""
    words = shlex.split(settings.get("command", ""))
    return words[words.index("--data-path") + 1] if "--data-path" in words[:-1] else None


def plan(args, configs) -> dict[str, list[int]]:
    spread = {n.strip() for n in args.spread.split(",") if n.strip()}
    unknown = spread - {c.name for c in study_configs(args.data)}
    if unknown:
        raise NmtError(f"--spread {','.join(sorted(unknown))}: unknown configuration (see --list)")
    seeds = {}
    for config in configs:
        n = max(args.seeds, 2 if config.name in spread else 1)
        seeds[config.name] = list(range(1, n + 1))
    return seeds


def evaluate(runs_dir, configs, seeds, test, toy, beam_size) -> None:
    from nmt.study.metrics import evaluate_run
    from nmt.study.runner import run_dir_of, status

    for config in configs:
        for seed in seeds[config.name]:
            run_dir = run_dir_of(runs_dir, config.name, seed)
            failed = run_dir / "study_eval_failed.txt"
            if status(run_dir) != "finished" or (run_dir / "study_eval.json").exists():
                continue
            try:
                evaluate_run(run_dir, test, toy, beam_size)
                failed.unlink(missing_ok=True)
            except Exception as error:   # one broken run must not stop the report
                failed.write_text(f"evaluation failed: {type(error).__name__}: {error}\n")


def render_figures(args, configs, runs, sentences) -> tuple[dict, str | None]:
    from nmt.study.configs import label
    from nmt.study.gallery import family_grid, learning_curves
    from nmt.translator import Translator

    figures, translations = {}, {}
    for run in runs:
        if run["status"] == "finished" and run["seed"] == run["first_seed"] and run["name"] not in translations:
            try:
                translator = Translator.from_checkpoint(run["run_dir"] / "checkpoints" / "best.pt", device="cpu")
                translations[run["name"]] = translator.translate([s for s, _ in sentences])
            except Exception as error:   # drawn as missing, named in the log
                print(f"nmt.study: no gallery row for {run['name']}: {error}", file=sys.stderr)
    for family, title in FAMILIES.items():
        names = []
        for config in configs:
            if config.family == family:
                names += [n for n in (*config.also, config.name) if n in translations and n not in names]
        if not names:
            continue
        bleu = {r["name"]: r["eval"]["test_bleu"] for r in runs if r["eval"] and r["seed"] == r["first_seed"]}
        rows = [(f"{label(n)}\ntest BLEU {bleu[n]:.1f}" if n in bleu else label(n), translations[n]) for n in names]
        name = f"gallery_{family}.png"
        family_grid(rows, sentences, title, args.out / name)
        figures[family] = name
    learning = "learning_curves.png"
    families = {}
    for config in configs:
        names = families.setdefault(config.family, (FAMILIES[config.family], []))[1]
        names += [n for n in (*config.also, config.name) if n not in names]
    learning_curves([r for r in runs if r["records"]], args.out / learning, families)
    return figures, learning


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    from nmt.study.report import collect, write_readme
    from nmt.study.runner import train

    try:
        configs = select(study_configs(args.data), args.only)
        if args.list:
            for config in configs:
                print(f"{config.family:11s} {config.name:28s} {' '.join(config.overrides)}")
            return 0
        args.runs_dir.mkdir(parents=True, exist_ok=True)
        args.out.mkdir(parents=True, exist_ok=True)
        settings_path = args.runs_dir / "study.json"
        seeds = plan(args, configs)
        if args.report_only:
            if not settings_path.exists():
                raise NmtError(f"{settings_path} missing: run the study first (without --report-only)")
            settings = json.loads(settings_path.read_text())
            args.data_path = args.data_path or settings.get("data_path") or _data_path_of(settings)
        else:
            settings = {
                "date": datetime.date.today().isoformat(),
                "machine": args.machine or default_machine(),
                "command": "python -m nmt.study " + shlex.join(argv),
                "commit": git_commit(), "data": args.data,
                "data_description": ("the toy task (nmt.data.toy)" if args.data == "toy" else
                                     "Multi30k task 1 de→en (29,000 training pairs), sentencepiece "
                                     f"unigram {PROFILES[args.data].vocab_size:,} joint vocabulary, "
                                     f"batches of {PROFILES[args.data].batch_tokens:,} padded tokens"),
                "budget_minutes": args.budget_minutes, "budget_steps": args.budget_steps,
                "seeds": list(range(1, args.seeds + 1)), "spread": sorted(
                    n for n in seeds if len(seeds[n]) > args.seeds),
                "spread_seeds": [args.seeds + 1], "runs_dir": str(args.runs_dir),
                "val_sentences": args.val_sentences, "val_every": args.val_every,
                "beam_size": args.beam_size, "threads": args.threads, "sizes": PROFILES[args.data].__dict__,
                "seeds_of": seeds, "only": args.only,
                "data_path": str(Path(args.data_path).resolve()) if args.data_path else None,
            }
            if settings_path.exists():   # continuing a study: keep when and where it began
                previous = json.loads(settings_path.read_text())
                if previous.get("command") == settings["command"]:
                    settings["date"] = previous["date"]
                    if previous["commit"].endswith(settings["commit"]):
                        settings["commit"] = previous["commit"]
                    else:
                        settings["commit"] = f"{previous['commit']}, continued at {settings['commit']}"
            settings_path.write_text(json.dumps(settings, indent=1) + "\n")
        seeds = settings.get("seeds_of", seeds)
        configs = [c for c in configs if c.name in seeds]
        settings["report_commit"] = git_commit()
        settings["report_command"] = (f"python -m nmt.study --report-only --data {args.data} "
                                      + (f"--data-path {args.data_path} " if args.data_path else "")
                                      + f"--runs-dir {args.runs_dir} --out {args.out}"
                                      + (f" --only {args.only}" if args.only else ""))
        import torch

        torch.set_num_threads(args.threads)
        valid, test = load_pairs(args)
        if not args.report_only:
            common = common_overrides(args)
            timeout = (args.budget_minutes * 60 * 3 + 600) if args.budget_minutes else 3600
            total = sum(len(s) for s in seeds.values())
            done = 0
            for config in configs:
                for seed in seeds[config.name]:
                    done += 1
                    print(f"nmt.study: [{done}/{total}] {config.name} seed {seed}", flush=True)
                    from nmt.study.runner import run_dir_of
                    ok = train(config, seed, run_dir_of(args.runs_dir, config.name, seed), common, timeout,
                               args.threads)
                    if not ok:
                        print(f"nmt.study: {config.name} seed {seed} failed; see "
                              f"{run_dir_of(args.runs_dir, config.name, seed)}/study_failed.txt", flush=True)
                    evaluate(args.runs_dir, [config], seeds, test, args.data == "toy", args.beam_size)
        evaluate(args.runs_dir, configs, seeds, test, args.data == "toy", settings["beam_size"])
        runs = collect(args.runs_dir, configs, seeds)
        from nmt.study.gallery import pick_sentences
        sentences = pick_sentences(valid)
        figures, learning = render_figures(args, configs, runs, sentences)
        write_readme(args.out, settings, configs, runs, figures, learning, sentences)
    except NmtError as error:
        print(f"nmt: error: {error}", file=sys.stderr)
        return 1
    print(f"nmt.study: report {args.out / 'README.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
