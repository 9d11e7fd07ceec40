"""The command line of `python -m nmt_study`: its options, study.KEY=VALUE
overrides, and the data profile's defaults for what was not given."""

import argparse
import os
from pathlib import Path

from nmt import ArgumentParser, NmtError, finite_float
from nmt_study.configs import (BUDGETS, CONFIRMATION, CONFIRMATION_FOLDER, CONVERGENCE, CONVERGENCE_FOLDER,
                               LR_SWEEP, LR_SWEEP_FOLDER, PROFILES)
from nmt_study.preregistration import PREREGISTERED_FOLDER
from nmt_study.comma_lists import comma_items
from nmt_study.provenance import REPRODUCE

def whole_number(text: str) -> int:
    """argparse type: an integer written in ASCII digits (int() also takes "1_0" and "١")."""
    body = text.strip().removeprefix("-")
    if not (body.isascii() and body.isdigit()) or len(body) > 18:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (digits 0-9, at most 18)")
    return int(text)


OPTIONS = {"budget_minutes": finite_float, "budget_steps": whole_number, "seeds": whole_number, "only": str,
           "spread": str, "data": str, "data_path": str, "val_sentences": whole_number, "val_every": whole_number,
           "test_sentences": whole_number, "beam_size": whole_number, "jobs": whole_number,
           "patience": whole_number, "target_bleu": finite_float, "links": str, "valid_links": str,
           "train_links": str, "transformer_budget_steps": whole_number, "only_seeds": str, "confirm_links": str}


def parse_args(argv, description: str = "") -> argparse.Namespace:
    parser = build_parser(description)
    args = parser.parse_args(argv)
    args.plan = None          # --preregistered: its Plan (nmt_study.preregistration)
    apply_overrides(args, parser)
    apply_defaults(args, parser)
    own = {CONVERGENCE_FOLDER: ("--convergence", args.convergence, "the convergence check"),
           CONFIRMATION_FOLDER: ("--confirm", args.confirm, "the confirmation runs"),
           LR_SWEEP_FOLDER: ("--lr-sweep", args.lr_sweep, "the learning-rate sweep"),
           PREREGISTERED_FOLDER: ("--preregistered", args.preregistered, "the pre-registered confirmation")}
    part = next((folder for folder, (_, chosen, _) in own.items() if chosen), args.data)
    args.runs_dir = args.runs_dir or Path("runs/attention_study") / part
    args.out = args.out or Path("benchmarks/attention_study") / part
    if part in own:               # the check's own folder beside the part's, whichever --out was named
        args.out = Path(args.out).parent / part
    elif Path(args.out).name in own:   # those names mark the checks' reports (configs.py)
        flag, _, what = own[Path(args.out).name]
        parser.error(f"--out {args.out}: a folder named {Path(args.out).name} holds {what}; add {flag}, or "
                     "name another folder")
    args.reproduce = parse_reproduce(args.reproduce, parser)
    if args.preregistered:
        apply_preregistered(args, parser)
    if args.reproduce and args.lr_sweep:
        parser.error("--reproduce reruns runs of the grid; --lr-sweep trains its own rows: give one of the two")
    # where the records of the runs trained now go: the part's, or its reproduce/ folder
    args.records_out = args.out / REPRODUCE if args.reproduce else args.out
    if args.reproduce:
        args.runs_dir = Path(args.runs_dir) / REPRODUCE
    return args


def parse_reproduce(text: str, parser) -> dict[str, list[int]]:
    """--reproduce NAME:SEED,... -> {name: [seeds]}."""
    wanted: dict[str, list[int]] = {}
    for item in comma_items(text, "--reproduce", "give NAME:SEED items, e.g. bahdanau:1,luong_dot:2"):
        name, sep, seed = item.partition(":")
        if not sep or not (seed.isascii() and seed.isdigit()) or len(seed) > 18 or int(seed) < 1:
            parser.error(f"--reproduce {item!r}: expected NAME:SEED, e.g. bahdanau:1")
        wanted.setdefault(name, []).append(int(seed))
    return wanted


def build_parser(description: str) -> ArgumentParser:
    """The command's options (each --long option also as study.KEY=VALUE)."""
    parser = ArgumentParser(prog="python -m nmt_study", description=description)
    parser.add_argument("--data", choices=sorted(PROFILES), default="multi30k",
                        help="toy: the dates task with true alignments; multi30k: de-en captions")
    parser.add_argument("--data-path", help="local Multi30k folder (data.path); default: the hub copy")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--budget-minutes", type=finite_float, help="wall-clock minutes per run")
    budget.add_argument("--budget-steps", type=whole_number, help="optimiser updates per run (toy default 600, "
                        "multi30k 1600)")
    parser.add_argument("--transformer-budget-steps", type=whole_number, help="the Transformers' updates per run, "
                        "where they differ (multi30k default 1000: they are slower per update)")
    parser.add_argument("--seeds", type=whole_number, help="seeds per configuration (default 3; on Multi30k 5 for the "
                        "base and the top group fixed in nmt_study.configs)")
    parser.add_argument("--spread", default="", help="configurations that get one seed more than --seeds")
    parser.add_argument("--only-seeds", help="comma-separated seeds: of the plan, train only these "
                        "(e.g. 3: the third seeds that --spread adds, before the second seeds of the rest)")
    parser.add_argument("--only", help="comma-separated configurations or families (see --list)")
    add_check_options(parser)
    parser.add_argument("--records-only", action="store_true",
                        help="train and save (and with --git-commit, commit) the records only: no report is "
                        "written; a later --report-only writes it")
    parser.add_argument("--jobs", type=whole_number, default=1, help="runs side by side, one thread each")
    parser.add_argument("--max-runs", type=whole_number, help="stop after training this many runs (split a long "
                        "study into sittings; run the command again to continue)")
    parser.add_argument("--runs-dir", type=Path, help="run folders (default runs/attention_study/DATA)")
    parser.add_argument("--out", type=Path, help="where README.md, the records, CSV files and pictures go "
                        "(default benchmarks/attention_study/DATA)")
    parser.add_argument("--val-sentences", type=whole_number, help="validation sentences during training")
    parser.add_argument("--val-every", type=whole_number, help="updates between validations")
    parser.add_argument("--patience", type=whole_number, help="validations without improvement before a run stops "
                        "(default 0 = never: every run trains its whole budget)")
    parser.add_argument("--target-bleu", type=finite_float, help="report the updates needed to reach this "
                        "validation BLEU (toy default 95)")
    parser.add_argument("--test-sentences", type=whole_number, help="first N test sentences (default all)")
    parser.add_argument("--beam-size", type=whole_number, default=1, help="test decoding beam (1 = greedy)")
    parser.add_argument("--links", help="reference word links of the test set, one line per sentence, "
                        "Pharaoh 'i-j' (e.g. from nmt_study.eflomal_links); the toy task has its own")
    parser.add_argument("--valid-links", help="reference word links of the validation set, one line per "
                        "sentence (nmt_study.eflomal_links --split valid), to choose a layer and head on; the toy "
                        "task has its own")
    parser.add_argument("--train-links", help="word links of the training pairs for the guided runs, one "
                        "line per pair, Pharaoh (nmt_study.eflomal_links --train-out); the toy task has its own")
    parser.add_argument("--cache-dir", help="sentencepiece cache (cache_dir); default data/")
    parser.add_argument("--threads", type=whole_number, default=1, help="CPU threads per run")
    parser.add_argument("--report-every", type=finite_float, default=10.0,
                        help="minutes between rewrites of the report while the study runs")
    parser.add_argument("--machine", help="how the report names this machine")
    parser.add_argument("--git-commit", action="store_true",
                        help="commit each finished run's record (and study.json) as it lands, nothing else, "
                        "so that a study stopped anywhere continues from the repository on a new machine")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the report")
    parser.add_argument("--reproduce", default="", help="NAME:SEED,...: train these runs again at this commit "
                        "into OUT/reproduce/records; the report compares each with its original record")
    parser.add_argument("--list", action="store_true", help="print the configurations and exit")
    parser.add_argument("overrides", nargs="*", help="study.KEY=VALUE, or KEY=VALUE for every run")
    return parser


def add_check_options(parser: ArgumentParser) -> None:
    """The convergence check's and the confirmation runs' options."""
    parser.add_argument("--convergence", action="store_true",
                        help="the convergence check (nmt_study.configs.CONVERGENCE): its rows, 3x the update "
                        "budget with early stopping, 2 seeds, into OUT/../convergence")
    parser.add_argument("--confirm", action="store_true",
                        help="the confirmation runs (nmt_study.configs.CONFIRMATION): their rows trained to early "
                        "stopping under a high update cap, 3 seeds, each scored on test_2016 and test_2017, "
                        "into OUT/../confirmation")
    parser.add_argument("--lr-sweep", action="store_true",
                        help="the learning-rate sweep (nmt_study.configs.LR_SWEEP): luong_general, luong_dot and "
                        "bahdanau at Adam rates 0.001, 0.002 and 0.004, the grid's update budget, 1 seed, each "
                        "rate chosen by validation BLEU, into OUT/../learning_rate")
    parser.add_argument("--preregistered", action="store_true",
                        help="the pre-registered confirmation: the rows, seeds, training rule and comparisons of "
                        "OUT/../preregistered/plan.json, which must be committed before its runs; each run "
                        "scored on test_2016 and test_2017")
    parser.add_argument("--confirm-links", help="reference word links of the confirmation set (test_2017_flickr), "
                        "one line per sentence (nmt_study.eflomal_links --split test_2017_flickr)")


def apply_overrides(args, parser) -> None:
    """study.KEY=VALUE sets an option; any other KEY=VALUE goes to every training run."""
    extra = []
    for item in args.overrides:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"{item!r}: expected KEY=VALUE")
        if key.startswith("study."):
            option = key[len("study."):]
            if option not in OPTIONS:
                parser.error(f"{key} unknown; study options are the --long options with _ for -")
            try:
                setattr(args, option, OPTIONS[option](value))
            except (ValueError, argparse.ArgumentTypeError):
                kind = "finite number" if OPTIONS[option] is finite_float else "whole number"
                parser.error(f"{key}={value!r}: not a {kind}")
        else:
            extra.append(item)
    args.overrides = extra


def apply_defaults(args, parser) -> None:
    """The profile's defaults for what was not given, and the checks between options."""
    if args.budget_minutes is not None and args.budget_steps is not None:
        parser.error("give study.budget_minutes or study.budget_steps, not both")
    if args.data not in PROFILES:
        parser.error(f"--data {args.data!r} unknown; choose one of {sorted(PROFILES)}")
    defaults = BUDGETS[args.data]
    chosen = [flag for flag, on in (("--convergence", args.convergence), ("--confirm", args.confirm),
                                    ("--lr-sweep", args.lr_sweep), ("--preregistered", args.preregistered)) if on]
    if len(chosen) > 1:
        parser.error(f"give one of {', '.join(chosen)}, not several: each is its own set of runs")
    if args.preregistered:
        refuse_beside_plan(args, parser)
    if args.convergence:
        apply_convergence(args, parser, defaults)
    if args.confirm:
        apply_confirmation(args, parser)
    if args.lr_sweep:
        apply_lr_sweep(args, parser)
    if args.budget_minutes is None and args.budget_steps is None:     # 0 is a budget (refused below), not unset
        args.budget_minutes, args.budget_steps = defaults.budget_minutes, defaults.budget_steps
    for name in ("seeds", "val_every", "val_sentences", "patience", "target_bleu"):
        if getattr(args, name) is None:
            setattr(args, name, getattr(defaults, name))
    if args.transformer_budget_steps is None and args.budget_steps == defaults.budget_steps:
        args.transformer_budget_steps = defaults.transformer_steps    # the profile's measured pair
    if args.transformer_budget_steps is not None and args.budget_minutes is not None:
        parser.error("--transformer-budget-steps needs an update budget (--budget-steps), not --budget-minutes")
    check_numbers(args)


# option -> (smallest value, what it must be); a study that cannot run is said before any run
AT_LEAST = {"budget_steps": (1, "at least 1"), "transformer_budget_steps": (1, "at least 1"),
            "seeds": (1, "at least 1"), "jobs": (1, "at least 1"), "threads": (1, "at least 1"),
            "val_every": (1, "at least 1"), "val_sentences": (1, "at least 1"), "beam_size": (1, "at least 1"),
            "test_sentences": (1, "at least 1 (leave it out for the whole test set)"),
            "patience": (0, "at least 0 (0: no early stopping)"), "max_runs": (0, "at least 0")}
MAX_BEAM = 100     # a test beam past this decodes for hours and finds nothing a smaller one does not
MAX_SEEDS = 100    # seeds per configuration: each is one training run of minutes to hours
MAX_JOBS = 256     # runs side by side, one thread each


def check_numbers(args) -> None:
    """Every numeric option in its range, or one NmtError line naming it."""
    for name, (low, need) in AT_LEAST.items():
        value = getattr(args, name)
        if value is not None and value < low:
            raise NmtError(f"--{name.replace('_', '-')} {value}: must be {need}")
    if args.budget_minutes is not None and args.budget_minutes <= 0:
        raise NmtError(f"--budget-minutes {args.budget_minutes:g}: must be more than 0")
    if args.report_every <= 0:
        raise NmtError(f"--report-every {args.report_every:g}: must be more than 0 minutes")
    for name, most, why in (("seeds", MAX_SEEDS, "each seed is one training run of every configuration"),
                            ("jobs", MAX_JOBS, "each job is a process and a thread")):
        if getattr(args, name) is not None and getattr(args, name) > most:
            raise NmtError(f"--{name} {getattr(args, name)}: at most {most} ({why})")
    if args.beam_size > MAX_BEAM:
        raise NmtError(f"--beam-size {args.beam_size}: at most {MAX_BEAM}")
    if args.target_bleu is not None and not 0 <= args.target_bleu <= 100:
        raise NmtError(f"--target-bleu {args.target_bleu:g}: BLEU is between 0 and 100")


def apply_convergence(args, parser, defaults) -> None:
    """--convergence: its rows, three times the update budgets, early stopping, its seeds."""
    if args.data != "multi30k" or args.only is not None or any(
            getattr(args, name) is not None for name in ("budget_minutes", "budget_steps")):
        parser.error("--convergence sets the Multi30k rows and budgets itself: give it without --data toy, "
                     "--budget-* and --only")
    args.budget_steps = defaults.budget_steps * CONVERGENCE.factor
    args.transformer_budget_steps = defaults.transformer_steps * CONVERGENCE.factor
    args.only = ",".join(CONVERGENCE.rows)
    args.patience = CONVERGENCE.patience if args.patience is None else args.patience
    args.seeds = CONVERGENCE.seeds if args.seeds is None else args.seeds


def apply_lr_sweep(args, parser) -> None:
    """--lr-sweep: its rows at each rate, the grid's update budget (set below), its seeds."""
    if args.data != "multi30k" or args.only is not None or any(
            getattr(args, name) is not None for name in ("budget_minutes", "budget_steps", "transformer_budget_steps")):
        parser.error("--lr-sweep sets the Multi30k rows and the grid's budget itself: give it without --data toy, "
                     "--budget-*, --transformer-budget-steps and --only")
    args.seeds = LR_SWEEP.seeds if args.seeds is None else args.seeds


def refuse_beside_plan(args, parser) -> None:
    """--preregistered with an option its plan fixes: one line, before any default is filled."""
    given = args.only is not None or args.only_seeds is not None or args.spread or args.reproduce
    if args.data != "multi30k" or given or any(
            getattr(args, name) is not None for name in ("budget_minutes", "budget_steps", "seeds", "patience",
                                                          "val_every", "val_sentences", "transformer_budget_steps")):
        parser.error("--preregistered takes its rows, seeds and training rule from its plan: give it without "
                     "--data toy, --budget-*, --seeds, --patience, --val-*, --only, --only-seeds, --spread "
                     "and --reproduce")


def apply_preregistered(args, parser) -> None:
    """--preregistered: the plan's rows, seeds, cap, stopping rule and validation set
    (after the folder is known: the plan lives in it)."""
    from nmt_study.preregistration import load_plan

    plan = load_plan(args.out)
    args.plan = plan
    args.budget_steps = args.transformer_budget_steps = plan.cap_steps
    args.budget_minutes = None
    args.only = ",".join(plan.rows)
    args.patience, args.val_every, args.val_sentences = plan.patience, plan.val_every, plan.val_sentences
    args.seeds = len(plan.seeds)


def apply_confirmation(args, parser) -> None:
    """--confirm: its rows, its update cap (both architectures), early stopping, its seeds."""
    if args.data != "multi30k" or args.only is not None or any(
            getattr(args, name) is not None for name in ("budget_minutes", "budget_steps", "transformer_budget_steps")):
        parser.error("--confirm sets the Multi30k rows and budgets itself: give it without --data toy, "
                     "--budget-*, --transformer-budget-steps and --only")
    args.budget_steps = args.transformer_budget_steps = CONFIRMATION.cap_steps
    args.only = ",".join(CONFIRMATION.rows)
    args.patience = CONFIRMATION.patience if args.patience is None else args.patience
    args.seeds = CONFIRMATION.seeds if args.seeds is None else args.seeds


# The options that name files or folders: recorded absolute, so that the page writes them
# relative to its repository root however the command was run (from a worktree, say).
PATH_OPTIONS = ("--out", "--runs-dir", "--cache-dir", "--data-path", "--links", "--valid-links",
                "--train-links", "--confirm-links")


def absolute_paths(argv: list[str]) -> list[str]:
    """argv with the value of every PATH_OPTIONS option made absolute (from this folder)."""
    words, expects_path = [], False
    for word in argv:
        option, sep, value = word.partition("=")
        if expects_path:
            word = os.path.abspath(word)
        elif sep and option in PATH_OPTIONS:
            word = f"{option}={os.path.abspath(value)}"
        expects_path = word in PATH_OPTIONS
        words.append(word)
    return words
