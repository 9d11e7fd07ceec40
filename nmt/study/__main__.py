"""python -m nmt.study: train every attention configuration on one budget, then report.

    python -m nmt.study --data toy --jobs 2            # part 1: every configuration, 3 seeds
    python -m nmt.study --data-path ../shared/data/multi30k --links test.links --jobs 2
    python -m nmt.study --data toy --only bahdanau,luong_dot --budget-steps 40 --out /tmp/study
    python -m nmt.study --data toy --report-only       # rewrite the report from the records

Each configuration and seed is one `python -m nmt.train` process on one
thread; --jobs N run side by side (a failure is recorded and the study goes
on). Each finished run leaves its record under OUT/runs/ (commit it); a
study run again skips every run with a finished record, so a stopped study
continues where it stopped. Before training, the plan and its estimated
cost are printed. `study.KEY=VALUE` arguments are accepted for the options
(study.budget_minutes=2, study.seeds=2); any other KEY=VALUE is passed to
every training run.
"""

if __name__ == "__main__":      # first: stop signals are one line while torch loads
    from nmt.cli import run_command

    run_command("nmt.study.__main__", "; finished runs keep their records")

import argparse
import datetime
import json
import os
import platform
import shlex
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from nmt.cli import command
from nmt.cli_checks import ArgumentParser, finite_float, write_stdout
from nmt.config_files import CONFIGS
from nmt.data.alignments import toy_defaults, write_toy_alignments
from nmt.errors import NmtError
from nmt.file_inputs import refuse_special
from nmt.provenance import git_commit
from nmt.study.configs import BUDGETS, CONVERGENCE, PROFILES, select, study_configs

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = {"budget_minutes": finite_float, "budget_steps": int, "seeds": int, "only": str, "spread": str,
           "data": str, "data_path": str, "val_sentences": int, "val_every": int, "test_sentences": int,
           "beam_size": int, "jobs": int, "patience": int, "target_bleu": finite_float, "links": str,
           "valid_links": str,
           "train_links": str, "transformer_budget_steps": int, "only_seeds": str}


def parse_args(argv):
    parser = ArgumentParser(prog="python -m nmt.study", description=__doc__.split("\n")[0])
    parser.add_argument("--data", choices=sorted(PROFILES), default="multi30k",
                        help="toy: the dates task with true alignments; multi30k: de-en captions")
    parser.add_argument("--data-path", help="local Multi30k folder (data.path); default: the hub copy")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--budget-minutes", type=finite_float, help="wall-clock minutes per run")
    budget.add_argument("--budget-steps", type=int, help="optimiser updates per run (toy default 600, "
                        "multi30k 1600)")
    parser.add_argument("--transformer-budget-steps", type=int, help="the Transformers' updates per run, "
                        "where they differ (multi30k default 1000: they are slower per update)")
    parser.add_argument("--seeds", type=int, help="seeds per configuration (toy default 3, multi30k 2)")
    parser.add_argument("--spread", default="", help="configurations that get one seed more than --seeds")
    parser.add_argument("--only-seeds", default="", help="comma-separated seeds: of the plan, train only these "
                        "(e.g. 3: the third seeds that --spread adds, before the second seeds of the rest)")
    parser.add_argument("--only", help="comma-separated configurations or families (see --list)")
    parser.add_argument("--convergence", action="store_true",
                        help="the convergence check (nmt.study.configs.CONVERGENCE): its rows, 3x the update "
                        "budget with early stopping, 2 seeds, into OUT/../convergence")
    parser.add_argument("--jobs", type=int, default=1, help="runs side by side, one thread each")
    parser.add_argument("--max-runs", type=int, help="stop after training this many runs (split a long "
                        "study into sittings; run the command again to continue)")
    parser.add_argument("--runs-dir", type=Path, help="run folders (default runs/attention_study/DATA)")
    parser.add_argument("--out", type=Path, help="where README.md, the records, CSV files and pictures go "
                        "(default benchmarks/attention_study/DATA)")
    parser.add_argument("--val-sentences", type=int, help="validation sentences during training")
    parser.add_argument("--val-every", type=int, help="updates between validations")
    parser.add_argument("--patience", type=int, help="validations without improvement before a run stops "
                        "(0 = never; toy default 10)")
    parser.add_argument("--target-bleu", type=finite_float, help="report the updates needed to reach this "
                        "validation BLEU (toy default 95)")
    parser.add_argument("--test-sentences", type=int, help="first N test sentences (default all)")
    parser.add_argument("--beam-size", type=int, default=1, help="test decoding beam (1 = greedy)")
    parser.add_argument("--links", help="reference word links of the test set, one line per sentence, "
                        "Pharaoh 'i-j' (e.g. from nmt.study.eflomal_links); the toy task has its own")
    parser.add_argument("--valid-links", help="reference word links of the validation set, one line per "
                        "sentence (nmt.study.eflomal_links --split valid), to choose a layer and head on; the toy "
                        "task has its own")
    parser.add_argument("--train-links", help="word links of the training pairs for the guided runs, one "
                        "line per pair, Pharaoh (nmt.study.eflomal_links --train-out); the toy task has its own")
    parser.add_argument("--cache-dir", help="sentencepiece cache (cache_dir); default data/")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads per run")
    parser.add_argument("--report-every", type=finite_float, default=10.0,
                        help="minutes between rewrites of the report while the study runs")
    parser.add_argument("--machine", help="how the report names this machine")
    parser.add_argument("--git-commit", action="store_true",
                        help="commit each finished run's record (and study.json) as it lands, nothing else, "
                        "so that a study stopped anywhere continues from the repository on a new machine")
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
            if option not in OPTIONS:
                parser.error(f"{key} unknown; study options are the --long options with _ for -")
            try:
                setattr(args, option, OPTIONS[option](value))
            except (ValueError, argparse.ArgumentTypeError):
                kind = "finite number" if OPTIONS[option] is finite_float else OPTIONS[option].__name__
                parser.error(f"{key}={value!r}: not a {kind}")
        else:
            extra.append(item)
    args.overrides = extra
    if args.budget_minutes and args.budget_steps:
        parser.error("give study.budget_minutes or study.budget_steps, not both")
    if args.data not in PROFILES:
        parser.error(f"--data {args.data!r} unknown; choose one of {sorted(PROFILES)}")
    defaults = BUDGETS[args.data]
    if args.convergence:
        apply_convergence(args, parser, defaults)
    if not args.budget_minutes and not args.budget_steps:
        args.budget_minutes, args.budget_steps = defaults.budget_minutes, defaults.budget_steps
    for name in ("seeds", "val_every", "val_sentences", "patience", "target_bleu"):
        if getattr(args, name) is None:
            setattr(args, name, getattr(defaults, name))
    if args.transformer_budget_steps is None and args.budget_steps == defaults.budget_steps:
        args.transformer_budget_steps = defaults.transformer_steps    # the profile's measured pair
    if args.transformer_budget_steps is not None and (args.budget_minutes or args.transformer_budget_steps < 1):
        parser.error("--transformer-budget-steps needs an update budget and must be at least 1")
    if args.seeds < 1 or args.jobs < 1 or (args.max_runs is not None and args.max_runs < 0):
        parser.error("--seeds and --jobs must be at least 1, --max-runs at least 0")
    part = "convergence" if args.convergence else args.data
    args.runs_dir = args.runs_dir or Path("runs/attention_study") / part
    args.out = args.out or Path("benchmarks/attention_study") / part
    return args


def apply_convergence(args, parser, defaults) -> None:
    """--convergence: its rows, three times the update budgets, early stopping, its seeds."""
    if args.data != "multi30k" or args.budget_minutes or args.budget_steps or args.only:
        parser.error("--convergence sets the Multi30k rows and budgets itself: give it without --data toy, "
                     "--budget-* and --only")
    args.budget_steps = defaults.budget_steps * CONVERGENCE.factor
    args.transformer_budget_steps = defaults.transformer_steps * CONVERGENCE.factor
    args.only = ",".join(CONVERGENCE.rows)
    args.patience = CONVERGENCE.patience if args.patience is None else args.patience
    args.seeds = CONVERGENCE.seeds if args.seeds is None else args.seeds


def data_overrides(args) -> list[str]:
    if args.data == "toy":
        return ["data=toy"]
    return ["data=multi30k"] + ([f"data.path={Path(args.data_path).resolve()}"] if args.data_path else [])


def common_overrides(args) -> list[str]:
    sizes = PROFILES[args.data]
    cap = BUDGETS[args.data].cap_minutes
    budget = ([f"trainer.max_minutes={args.budget_minutes}", "trainer.max_steps=1000000"]
              if args.budget_minutes else
              [f"trainer.max_steps={args.budget_steps}", *([f"trainer.max_minutes={cap}"] if cap else [])])
    return [*data_overrides(args), f"data.vocab_size={sizes.vocab_size}",
            f"data.batch_tokens={sizes.batch_tokens}", *budget, f"trainer.val_every={args.val_every}",
            f"trainer.val_max_sentences={args.val_sentences}", "trainer.keep_last=0",
            "trainer.heatmap_sentences=0", "trainer.log_every=50", "trainer.metric=bleu",
            f"trainer.patience={args.patience}", f"trainer.label_smoothing={sizes.label_smoothing}",
            *([f"cache_dir={args.cache_dir}"] if args.cache_dir else []), *args.overrides]


def default_machine() -> str:
    return f"{os.cpu_count()}-core CPU ({platform.machine()}, {platform.system()}), no GPU"


def cpu_fingerprint(cpuinfo: str | None = None) -> str:
    """What makes a run's minutes comparable: the processor's model, family and
    model number, its widest vector unit and the core count, from
    /proc/cpuinfo where there is one ("AMD EPYC, family 25 model 1, avx2, 2
    cores"). Recorded with each run, so that a plan estimates from runs on
    the same kind of processor."""
    from nmt.training.precision import cpu_flags, read_cpuinfo

    cpuinfo = read_cpuinfo() if cpuinfo is None else cpuinfo
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    flags = cpu_flags(cpuinfo)
    vector = next((f for f in ("amx_bf16", "avx512_bf16", "avx512f", "avx2", "avx", "neon", "asimd")
                   if f in flags or f in fields.get("Features", "").split()), "no avx")
    name = fields.get("model name") or platform.processor() or platform.machine()
    family = (f", family {fields['cpu family']} model {fields['model']}"
              if "cpu family" in fields and "model" in fields else "")
    return f"{name}{family}, {vector}, {os.cpu_count()} cores"


def load_pairs(args, split: str = "valid"):
    """(validation pairs, or training pairs with split="train"; test pairs) of
    the study's data, raw text; validation and test without empty sources."""
    from hydra import compose, initialize_config_dir

    from nmt.data.corpora import load_corpus

    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose("config", overrides=data_overrides(args))
    corpus = load_corpus(cfg.data, Path(args.cache_dir or cfg.cache_dir))
    if split == "train":
        valid = list(corpus.train)
    else:
        valid = [(s, t) for s, t in corpus.valid if s.strip()]
    test = [(s, t) for s, t in corpus.test if s.strip()]
    if args.test_sentences:
        test = test[: args.test_sentences]
    if not test:
        raise NmtError(f"{corpus.name} has no test set; the study reports test BLEU")
    return valid, test


def reference_links(args, test, path: str | None = None, option: str = "--links",
                    split: str = "test") -> tuple[list | None, str | None]:
    """Word links (source word, target word) per pair of `test`, and what they
    are: the toy task's true links, or the file `path` (default --links)."""
    from nmt.study.alignment import read_links, toy_links

    if args.data == "toy":
        return [toy_links(s, t) for s, t in test], "the toy task's true alignment (nmt.data.toy.toy_alignment)"
    path = args.links if path is None and option == "--links" else path
    if not path:
        return None, None
    refuse_special(path, option, "give a text file of word links")     # a FIFO would hang
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        links = [read_links(line) for line in lines]
    except (OSError, ValueError) as error:
        raise NmtError(f"{option} {path}: {error}") from None
    if len(links) < len(test):
        raise NmtError(f"{option} {path}: {len(links)} lines for {len(test)} {split} sentences")
    return links[: len(test)], f"silver links from {Path(path).name} (a statistical aligner, not gold)"


def valid_references(args, valid) -> tuple[list, list] | None:
    """(validation pairs, their word links) to choose a layer and head on, or None."""
    links, _ = reference_links(args, valid, args.valid_links, "--valid-links", "validation")
    return (valid, links) if links is not None else None


def plan(args, configs) -> dict[str, list[int]]:
    spread = {n.strip() for n in args.spread.split(",") if n.strip()}
    unknown = spread - {c.name for c in study_configs(args.data)}
    if unknown:
        raise NmtError(f"--spread {','.join(sorted(unknown))}: unknown configuration (see --list)")
    wanted = None
    if args.only_seeds:
        try:
            wanted = {int(n) for n in args.only_seeds.split(",") if n.strip()}
        except ValueError:
            raise NmtError(f"--only-seeds {args.only_seeds}: give seed numbers, e.g. 3 or 2,3") from None
    budget = BUDGETS[args.data]
    top = set(budget.top_group) if args.seeds == budget.seeds else set()   # an explicit --seeds overrides

    def count(config) -> int:
        name = config.decode_of or config.name                 # a decode-only row follows what it decodes
        return max(args.seeds, budget.top_seeds if name in top else 0) + (config.name in spread)

    return {c.name: [s for s in range(1, count(c) + 1) if wanted is None or s in wanted] for c in configs}


def estimate_minutes(args, records: list[dict]) -> tuple[float, str]:
    """Minutes per run: the mean of this study's finished runs (training and
    evaluation, wall clock), else the profile's measured figure."""
    trained = [r for r in records if r.get("status") == "finished" and not r.get("decode_of")]  # decode-only
    here = cpu_fingerprint()                                                   # rows train nothing
    same = [r for r in trained if r.get("cpu") == here]
    done = [r["eval"]["wall_s"] + r.get("eval_seconds", 0) for r in (same or trained)]
    if same:
        return sum(done) / len(done) / 60, f"mean of the {len(done)} finished runs on this processor ({here})"
    if done:
        return (sum(done) / len(done) / 60, f"mean of the {len(done)} finished runs, none of them on this "
                f"processor ({here}): expect a different figure here")
    profile = BUDGETS[args.data]
    if args.budget_minutes:
        return args.budget_minutes * 1.1, "the budget plus a tenth for evaluation"
    if not profile.budget_steps:
        return float("nan"), "unknown: this profile has no measured figure for an update budget"
    return (profile.minutes_per_run * args.budget_steps / profile.budget_steps,
            "the profile's measured figure, scaled to the budget")


def train_alignments(args) -> Path:
    """The word links of the training pairs, for the guided runs: --train-links,
    or on the toy task its true links (python -m nmt.data.alignments toy FILE,
    at data=toy's sizes and seed)."""
    if args.train_links:
        path = Path(args.train_links).resolve()
        if not path.is_file():
            raise NmtError(f"--train-links {args.train_links}: no such file")
        return path
    if args.data != "toy":
        raise NmtError("the guided runs need word links of the training pairs: give --train-links FILE "
                       "(python -m nmt.study.eflomal_links --train-out FILE), or leave them out with "
                       "--only and the other families")
    path = (Path(args.runs_dir) / "toy_train.align").resolve()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        toy = toy_defaults()
        write_toy_alignments(path, *(int(toy[key]) for key in ("n_train", "n_valid", "n_test", "seed")))
    return path


# figures of a checkpoint that depend on nothing else: equal in two records means the same checkpoint
SAME_CHECKPOINT = ("best_step", "valid_bleu", "valid_perplexity", "aer", "entropy")


def run_common(config, args, common: list[str]) -> list[str]:
    """The overrides every run shares, as one configuration gets them: the guided
    runs' training links, the Transformers' own update budget."""
    if config.needs_alignments:
        common = [*common, f"data.train_alignments={train_alignments(args)}"]
    if config.transformer and args.transformer_budget_steps:
        common = [f"trainer.max_steps={args.transformer_budget_steps}" if o.startswith("trainer.max_steps=")
                  else o for o in common]
    return common


def run_one(config, seed, args, common, test, links, gallery, valid=None) -> dict:
    """Train (unless its run folder is finished) and evaluate one run -> its record.

    A decode-only configuration (`decode_of`) evaluates the run folder of the
    configuration it names, with its own beam and coverage penalty; a missing
    folder is trained first, with that configuration's own command and seed."""
    from nmt.study.configs import study_configs
    from nmt.study.metrics import evaluate_run
    from nmt.study.runner import failure_reason, read_record, record_path_of, run_dir_of, train

    trained = next(c for c in study_configs(args.data) if c.name == config.decode_of) if config.decode_of \
        else config
    common = run_common(trained, args, common)
    run_dir = run_dir_of(args.runs_dir, trained.name, seed)
    timeout = (args.budget_minutes * 60 * 3 + 600) if args.budget_minutes else None   # a stall is caught anyway
    record = {"name": config.name, "family": config.family, "seed": seed, "overrides": list(config.overrides),
              "common": common, "commit": git_commit(), "cpu": cpu_fingerprint()}
    if config.decode_of:
        record["decode_of"] = config.decode_of
    if not train(trained, seed, run_dir, common, timeout, args.threads):
        return {**record, "status": "failed", "reason": failure_reason(run_dir)}
    started = time.perf_counter()
    beam = config.beam_size or args.beam_size
    try:
        record.update(evaluate_run(run_dir, test, links, beam, args.target_bleu,
                                   () if config.decode_of else gallery,   # the trained row has it
                                   coverage_penalty=config.coverage_penalty, valid=valid))
    except Exception as error:    # one broken run must not stop the study
        return {**record, "status": "failed", "reason": f"evaluation failed: {type(error).__name__}: {error}"}
    if config.decode_of:
        # is the checkpoint decoded the one the trained row reports? A folder retrained since (on
        # another machine, or by other code) can differ: its figures on the same data then differ
        source = read_record(record_path_of(args.out, trained.name, seed)) or {}
        if source.get("status") == "finished":
            record["same_checkpoint_as_record"] = all(
                source["eval"].get(k) == record["eval"].get(k) for k in SAME_CHECKPOINT)
    return {**record, "status": "finished", "eval_seconds": time.perf_counter() - started}


def load_settings(out: Path) -> dict:
    path = out / "study.json"
    return json.loads(path.read_text()) if path.exists() else {}


@command
def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    from nmt.study.runner import record_done, record_path_of

    configs = select(study_configs(args.data), args.only)
    if args.list:
        write_stdout("".join(f"{config.family:11s} {config.name:28s} {' '.join(config.overrides)}\n"
                             for config in configs))
        return 0
    for option, path in (("--links", args.links), ("--valid-links", args.valid_links)):
        if path:                         # read after hours of training: a FIFO or a typo is said now
            refuse_special(path, option, "give a text file of word links")
            if not Path(path).is_file():
                raise NmtError(f"{option} {path}: no such file")
    args.out.mkdir(parents=True, exist_ok=True)
    settings = load_settings(args.out)
    if args.report_only and not settings:
        raise NmtError(f"{args.out / 'study.json'} missing: run the study first (without --report-only)")
    seeds = plan(args, configs)
    import torch

    torch.set_num_threads(args.threads)
    valid, test = load_pairs(args)
    from nmt.study.gallery import pick_sentences

    gallery = pick_sentences(valid)
    if args.git_commit and not args.report_only:
        from nmt.study.autocommit import work_tree_of

        work_tree_of(args.out)      # before any training: a folder outside git is one line
    if not args.report_only:
        # seed-major: every configuration's first seed before any second seed, so a
        # study stopped early has every row
        todo = [(c, s) for s in sorted({s for v in seeds.values() for s in v}) for c in configs
                if s in seeds[c.name] and not record_done(record_path_of(args.out, c.name, s))]
        total = sum(len(s) for s in seeds.values())
        finished = total - len(todo)
        if args.max_runs is not None:
            todo = todo[: args.max_runs]
        records = [r for c in study_configs(args.data) for r in collect_records(args.out, c.name)]
        minutes, basis = estimate_minutes(args, records)
        training = [c for c, _ in todo if not c.decode_of]
        decoding = len(todo) - len(training)
        cores = min(args.jobs, max(1, len(training)))
        write_stdout(f"nmt.study: plan: {len(configs)} configurations, {total} runs, {finished} "
              f"already finished (not rerun); {len(training)} runs × {minutes:.2f} minutes on {cores} "
              f"core{'s' if cores > 1 else ''} ≈ {len(training) * minutes / cores / 60:.2f} hours "
              f"({len(training) * minutes / cores:.0f} minutes; {len(training) * minutes / 60:.2f} CPU-hours; "
              f"minutes per run: {basis})"
              + (f"; then {decoding} decode-only rows (the test set decoded again from a trained run's "
                 "checkpoint, no training)" if decoding else "")
              + (f"; --max-runs {args.max_runs}: then stop" if args.max_runs is not None else "")
              + "\n", keep_going=True)
        session = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                   "machine": args.machine or default_machine(),
                   "command": "python -m nmt.study " + shlex.join(argv), "commit": git_commit(),
                   "jobs": args.jobs, "threads": args.threads, "runs": len(todo)}
        settings = {**settings, "data": args.data, "data_description": describe(args),
                    "budget_minutes": args.budget_minutes, "budget_steps": args.budget_steps,
                    "cap_minutes": None if args.budget_minutes else BUDGETS[args.data].cap_minutes,
                    "transformer_budget_steps": args.transformer_budget_steps,
                    "val_sentences": args.val_sentences, "val_every": args.val_every,
                    "patience": args.patience, "target_bleu": args.target_bleu,
                    "beam_size": args.beam_size, "sizes": PROFILES[args.data].__dict__,
                    "runs_dir": str(args.runs_dir), "links": args.links, "valid_links": args.valid_links,
                    "train_links": args.train_links,
                    "data_path": args.data_path,
                    "sessions": [*settings.get("sessions", []), session]}
        (args.out / "study.json").write_text(json.dumps(settings, indent=1) + "\n")
        links, _ = reference_links(args, test)
        valid_links = valid_references(args, valid)
        if any(c.needs_alignments for c, _ in todo):
            train_alignments(args)
        common = common_overrides(args)
        lock, last_report, done = threading.Lock(), time.monotonic(), 0
        # decode-only rows after every training, so that the runs they decode are finished
        phases = [[(c, s) for c, s in todo if not c.decode_of], [(c, s) for c, s in todo if c.decode_of]]
        for phase in phases:
            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                futures = {pool.submit(run_one, c, s, args, common, test, links, [x for x, _ in gallery],
                                       valid_links):
                           (c, s) for c, s in phase}
                for future in as_completed(futures):
                    done += 1
                    config, seed = futures[future]
                    save_record(args.out, config, seed, future.result(), done, len(todo),
                                args.git_commit)
                    if time.monotonic() - last_report > args.report_every * 60 and done < len(todo):
                        with lock:
                            rewrite_report(args, settings, configs, seeds, gallery, test)
                        last_report = time.monotonic()
    rewrite_report(args, load_settings(args.out) or settings, configs, seeds, gallery, test)
    write_stdout(f"nmt.study: report {args.out / 'README.md'}\n", keep_going=True)
    return 0


def rewrite_report(args, settings: dict, configs, seeds: dict, gallery, test) -> None:
    """The report, while the study runs and at its end: every row with records
    (report_configs), so that studies split over processes by --only keep
    each other's rows."""
    from nmt.study.report import write_report
    from nmt.study.tables import collect

    write_report(args, settings, collect(args.out, report_configs(args, configs), seeds), gallery,
                 [t for _, t in test])


def save_record(out: Path, config, seed: int, record: dict, done: int, total: int,
                git_commit: bool = False) -> None:
    """Write a run's record (a failure never replaces a finished record), commit
    a finished one when asked (--git-commit), and say how it went."""
    from nmt.study.runner import read_record, record_path_of, write_record

    path = record_path_of(out, config.name, seed)
    previous = read_record(path)
    if record["status"] == "finished" or not (previous and previous.get("status") == "finished"):
        write_record(path, record)
    figure = record.get("eval", {})
    committed = ""
    if git_commit and record["status"] == "finished":
        from nmt.study.autocommit import commit_record

        committed = "; " + commit_record(
            out, path, f"study ({out.name}): {config.name} seed {seed}, test BLEU {figure['test_bleu']:.2f}"
            + (f", AER {figure['aer']:.3f}" if figure.get("aer") is not None else ""))
    write_stdout(f"nmt.study: [{done}/{total}] {config.name} seed {seed}: {record['status']}"
                 + (f", test BLEU {figure['test_bleu']:.1f}, AER {figure['aer']:.3f}"
                    if record["status"] == "finished" and figure.get("aer") is not None else "")
                 + (f" ({record['reason']})" if record["status"] != "finished" else "") + committed + "\n",
                 keep_going=True)      # the records and the report are the study's outputs


def collect_records(out: Path, name: str) -> list[dict]:
    from nmt.study.runner import read_record

    folder = out / "records" / name
    return [r for r in (read_record(p) for p in sorted(folder.glob("seed*.json"))) if r] if folder.is_dir() else []


def report_configs(args, configs):
    """The report shows every configuration; with --only, those asked for and every
    other one with records (so a study continued with --only keeps its earlier
    rows), or with --report-only --only just those asked for."""
    if not args.only:
        return study_configs(args.data)
    if args.report_only:
        return configs
    names = {c.name for c in configs}
    return [c for c in study_configs(args.data) if c.name in names or collect_records(args.out, c.name)]


def describe(args) -> str:
    if args.data == "toy":
        return "the toy task (nmt.data.toy): spelled-out dates to digits, reordered; 8,000 training pairs"
    sizes = PROFILES[args.data]
    return (f"Multi30k task 1 de→en (29,000 training pairs), sentencepiece unigram {sizes.vocab_size:,} "
            f"joint vocabulary, batches of {sizes.batch_tokens:,} padded tokens")


def cli() -> None:
    """The `nmt-study` console command: what `python -m nmt.study` runs."""
    from nmt.cli import run_command

    run_command("nmt.study.__main__", "; finished runs keep their records")
