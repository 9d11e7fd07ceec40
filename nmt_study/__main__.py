"""python -m nmt_study: train every attention configuration on one budget, then report.

    python -m nmt_study --data toy --jobs 2            # part 1: every configuration, 3 seeds
    python -m nmt_study --data-path data/multi30k --links test.links --jobs 2
    python -m nmt_study --data toy --only bahdanau,luong_dot --budget-steps 40 --out /tmp/study
    python -m nmt_study --data toy --report-only       # rewrite the report from the records
    python -m nmt_study --data toy --reproduce bahdanau:1   # rerun a record at this commit, compare

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
    from nmt import run_command

    run_command("nmt_study.__main__", "; finished runs keep their records")

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

from nmt import NmtError, command, git_commit, make_folder, refuse_special, write_stdout
from nmt_study.autocommit import work_tree_of
from nmt_study.configs import BUDGETS, PROFILES, is_lr_sweep_folder, lr_sweep_configs, select, study_configs
from nmt_study.guard import StudyLock, stop_children_on_signals
from nmt_study.machine import cpu_fingerprint
from nmt_study.inputs import data_overrides, describe, load_pairs, reference_links, train_alignments, valid_references
from nmt_study.options import absolute_paths, parse_args as parse_options
from nmt_study.planning import collect_records, plan, report_configs
from nmt_study.preregistration import plan_runs, require_committed
from nmt_study.provenance import rerun_done
from nmt_study.runner import CODE, read_record, record_done, record_path_of, write_settings
from nmt_study.second_test import confirm_links, confirm_pairs


def parse_args(argv): return parse_options(argv, __doc__.split("\n")[0])  # noqa: E704


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
    if args.plan is not None:
        return args.plan.minutes_per_run, "the plan's estimate (plan.json)"
    profile = BUDGETS[args.data]
    if args.budget_minutes:
        return args.budget_minutes * 1.1, "the budget plus a tenth for evaluation"
    if not profile.budget_steps:
        return float("nan"), "unknown: this profile has no measured figure for an update budget"
    return (profile.minutes_per_run * args.budget_steps / profile.budget_steps,
            "the profile's measured figure, scaled to the budget")


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


def run_one(config, seed, args, common, test, links, gallery, valid=None, confirm=None) -> dict:
    """Train (unless its run folder is finished) and evaluate one run -> its record.

    A decode-only configuration (`decode_of`) evaluates the run folder of the
    configuration it names, with its own beam and coverage penalty; a missing
    folder is trained first, with that configuration's own command and seed.
    `confirm`: (pairs, links or None) of the confirmation set, scored too."""
    from nmt_study.configs import study_configs
    from nmt_study.metrics import evaluate_confirmation, evaluate_run
    from nmt_study.runner import failure_reason, read_record, record_path_of, run_dir_of, train, trained_stamp

    trained = next(c for c in study_configs(args.data) if c.name == config.decode_of) if config.decode_of \
        else config
    common = run_common(trained, args, common)
    run_dir = run_dir_of(args.runs_dir, trained.name, seed)
    timeout = (args.budget_minutes * 60 * 3 + 600) if args.budget_minutes else None   # a stall is caught anyway
    here = git_commit(CODE)
    record = {"name": config.name, "family": config.family, "seed": seed, "overrides": list(config.overrides),
              "common": common, "commit": here, "cpu": cpu_fingerprint()}
    if config.decode_of:
        record["decode_of"] = config.decode_of
    # a rerun at the final commit must train there; a study may evaluate a folder trained before
    try:
        trained_now = train(trained, seed, run_dir, common, timeout, args.threads,
                            at_commit=here if args.reproduce else None, commit=here)
    except NmtError as error:                 # a folder it may not touch: this run fails, the study goes on
        return {**record, "status": "failed", "reason": str(error)}
    if not trained_now:
        return {**record, "status": "failed", "reason": failure_reason(run_dir)}
    stamp = trained_stamp(run_dir)
    record["commit"] = stamp.get("commit", "unknown")            # the code that trained it
    if record["commit"] != here:
        record["evaluated_at"] = here
    if stamp.get("continued_from_updates"):                     # interrupted, then continued (exact resume)
        record["continued_from_updates"] = stamp["continued_from_updates"]
    if stamp.get("cpu", record["cpu"]) != record["cpu"]:         # the processor that trained it
        record["evaluated_on"], record["cpu"] = record["cpu"], stamp["cpu"]
    started = time.perf_counter()
    beam = config.beam_size or args.beam_size
    try:
        record.update(evaluate_run(run_dir, test, links, beam, args.target_bleu,
                                   () if config.decode_of else gallery,   # the trained row has it
                                   coverage_penalty=config.coverage_penalty, valid=valid))
        if confirm is not None:
            record["confirm"] = evaluate_confirmation(run_dir, *confirm, beam, config.coverage_penalty)
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
    if not path.exists():
        return {}
    refuse_special(path, "", "the study's settings are a JSON file")
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise NmtError(f"{path}: {error}; restore it from git or remove it") from None
    if not isinstance(settings, dict):
        raise NmtError(f"{path}: not the study's settings (a JSON object); restore it from git or remove it")
    return settings


@command
def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    configs, seeds = chosen_runs(args)
    if args.list:
        write_stdout("".join(f"{config.family:11s} {config.name:28s} {' '.join(config.overrides)}\n"
                             for config in configs))
        return 0
    for option, path in (("--links", args.links), ("--valid-links", args.valid_links),
                         ("--confirm-links", args.confirm_links)):
        if path:                         # read after hours of training: a FIFO or a typo is said now
            refuse_special(path, option, "give a text file of word links")
            if not Path(path).is_file():
                raise NmtError(f"{option} {path}: no such file")
    make_folder(args.out, "--out")
    settings = load_settings(args.out)
    if (args.report_only or args.reproduce) and not settings:
        raise NmtError(f"{args.out / 'study.json'} missing: run the study first (without --report-only)")
    import torch

    torch.set_num_threads(args.threads)
    valid, test = load_pairs(args)
    from nmt_study.gallery import pick_sentences

    gallery = pick_sentences(valid)
    failed = 0
    if not args.report_only:
        confirm = confirm_pairs(args)
        confirm = (confirm, confirm_links(args, confirm)) if confirm else None
        if args.git_commit:
            work_tree_of(args.records_out)      # before any folder or training: outside git is one line
        if args.plan is not None:               # a pre-registration is a committed, unchanged plan
            require_committed(args.plan)
        with StudyLock({"--runs-dir": args.runs_dir, "--out": args.records_out}), stop_children_on_signals():
            failed, ran = train_all(args, argv, settings, configs, seeds, (valid, test, gallery, confirm))
    if not args.records_only:
        rewrite_report(args, load_settings(args.out) or settings, configs, seeds, gallery, test)
        write_stdout(f"nmt_study: report {args.out / 'README.md'}\n", keep_going=True)
    if failed:
        raise NmtError(f"{failed} of {ran} runs failed (each reason is in its record and in its run folder's "
                       f"study_failed.txt); the finished runs keep their records")
    return 0


def chosen_runs(args) -> tuple[list, dict[str, list[int]]]:
    """(configurations, seeds of each) this command trains: --only's and the
    plan's, or --reproduce's."""
    if args.reproduce:
        return select(study_configs(args.data), ",".join(args.reproduce)), dict(args.reproduce)
    if args.plan is not None:
        return plan_runs(args.plan, args.data)
    if args.lr_sweep:
        configs = lr_sweep_configs(args.data)
        return configs, {c.name: list(range(1, args.seeds + 1)) for c in configs}
    configs = select(study_configs(args.data), args.only)
    return configs, plan(args, configs)


def pending(args, configs, seeds) -> tuple[list, int]:
    """(config, seed) not yet finished, seed-major: every configuration's first
    seed before any second seed, so a study stopped early has every row; and
    the number of runs planned. A --reproduce rerun counts only if this
    commit trained it, on this processor or on its original's
    (provenance.rerun_done): any other is trained again."""
    if args.reproduce:
        here, cpu = git_commit(CODE), cpu_fingerprint()

        def done(name, seed):
            return rerun_done(read_record(record_path_of(args.records_out, name, seed)),
                              read_record(record_path_of(args.out, name, seed)), here, cpu)
    else:
        def done(name, seed):
            return record_done(record_path_of(args.records_out, name, seed))
    todo = [(c, s) for s in sorted({s for v in seeds.values() for s in v}) for c in configs
            if s in seeds[c.name] and not done(c.name, s)]
    return todo, sum(len(s) for s in seeds.values())


def print_plan(args, configs, todo: list, total: int, finished: int) -> None:
    records = [r for c in study_configs(args.data) for r in collect_records(args.out, c.name)]
    minutes, basis = estimate_minutes(args, records)
    training = [c for c, _ in todo if not c.decode_of]
    decoding = len(todo) - len(training)
    cores = min(args.jobs, max(1, len(training)))
    write_stdout(f"nmt_study: plan: {len(configs)} configurations, {total} runs, {finished} "
                 f"already finished (not rerun); {len(training)} run{'s' * (len(training) != 1)} × {minutes:.2f} "
                 f"minutes on {cores} "
                 f"core{'s' if cores > 1 else ''} ≈ {len(training) * minutes / cores / 60:.2f} hours "
                 f"({len(training) * minutes / cores:.0f} minutes; {len(training) * minutes / 60:.2f} CPU-hours; "
                 f"minutes per run: {basis})"
                 + (f"; then {decoding} decode-only rows (the test set decoded again from a trained run's "
                    "checkpoint, no training)" if decoding else "")
                 + (f"; --max-runs {args.max_runs}: then stop" if args.max_runs is not None else "")
                 + "\n", keep_going=True)


def record_session(args, argv, settings: dict, runs: int) -> dict:
    """study.json of the records' folder: the settings and this session's command."""
    session = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "machine": args.machine or default_machine(),
               "command": "python -m nmt_study " + shlex.join(absolute_paths(argv)), "commit": git_commit(CODE),
               "jobs": args.jobs, "threads": args.threads, "runs": runs}
    settings = {**settings, "data": args.data, "data_description": describe(args),
                "budget_minutes": args.budget_minutes, "budget_steps": args.budget_steps,
                "cap_minutes": None if args.budget_minutes else BUDGETS[args.data].cap_minutes,
                "transformer_budget_steps": args.transformer_budget_steps,
                "val_sentences": args.val_sentences, "val_every": args.val_every,
                "patience": args.patience, "target_bleu": args.target_bleu,
                "beam_size": args.beam_size, "sizes": PROFILES[args.data].__dict__,
                "runs_dir": str(args.runs_dir), "links": args.links, "valid_links": args.valid_links,
                "train_links": args.train_links, "confirm_links": args.confirm_links, "data_path": args.data_path,
                "sessions": [*settings.get("sessions", []), session]}
    write_settings(args.records_out, settings)      # whole or not at all: a full disk is one line
    return settings


def train_all(args, argv, settings: dict, configs, seeds: dict, data: tuple) -> tuple[int, int]:
    """Train and evaluate every pending run, `--jobs` side by side, saving each
    record as it lands and rewriting the report every --report-every minutes
    -> (runs failed, runs run)."""
    valid, test, gallery, confirm = data
    todo, total = pending(args, configs, seeds)
    finished = total - len(todo)
    if args.max_runs is not None:
        todo = todo[: args.max_runs]
    print_plan(args, configs, todo, total, finished)
    settings = record_session(args, argv, settings if not args.reproduce else load_settings(args.records_out),
                              len(todo))
    links, _ = reference_links(args, test)
    valid_links = valid_references(args, valid)
    if any(c.needs_alignments for c, _ in todo):
        train_alignments(args)
    return run_pending(args, todo, (configs, seeds), (test, links, gallery, valid_links, confirm))


def run_pending(args, todo: list, plan_of: tuple, data: tuple) -> tuple[int, int]:
    """Run `todo`, `--jobs` side by side, saving each record as it lands -> (failed, run)."""
    configs, seeds = plan_of
    test, links, gallery, valid_links, confirm = data
    common = common_overrides(args)
    lock, last_report, done, failed = threading.Lock(), time.monotonic(), 0, 0
    # decode-only rows after every training, so that the runs they decode are finished
    for phase in ([(c, s) for c, s in todo if not c.decode_of], [(c, s) for c, s in todo if c.decode_of]):
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {pool.submit(run_one, c, s, args, common, test, links, [x for x, _ in gallery],
                                   valid_links, confirm): (c, s) for c, s in phase}
            for future in as_completed(futures):
                done += 1
                config, seed = futures[future]
                record = future.result()
                failed += record["status"] != "finished"
                save_record(args.records_out, config, seed, record, done, len(todo), args.git_commit)
                if not args.records_only and time.monotonic() - last_report > args.report_every * 60 \
                        and done < len(todo):
                    with lock:
                        rewrite_report(args, load_settings(args.out), configs, seeds, gallery, test)
                    last_report = time.monotonic()
    return failed, done


def rewrite_report(args, settings: dict, configs, seeds: dict, gallery, test) -> None:
    """The report, while the study runs and at its end: every row with records
    (report_configs), so that studies split over processes by --only keep
    each other's rows; the AER baselines read the test pairs' reference links
    (--links, else the study's own, where its file is still there)."""
    from nmt_study.index import rewrite_preregistered
    from nmt_study.report import write_report
    from nmt_study.tables import collect

    if args.plan is not None:
        return rewrite_preregistered(args.out, args.plan, settings)
    if is_lr_sweep_folder(args.out):
        from nmt_study.index import write_index
        from nmt_study.lr_sweep_report import write_lr_sweep_report

        write_lr_sweep_report(args.out, settings)
        write_index(Path(args.out).parent)
        return

    saved = settings.get("links")
    path = args.links or (saved if saved and Path(saved).is_file() else None)
    links, _ = reference_links(args, test, path) if args.data == "toy" or path else (None, None)
    write_report(args, settings, collect(args.out, report_configs(args, configs), seeds), gallery, test, links)


def save_record(out: Path, config, seed: int, record: dict, done: int, total: int,
                git_commit: bool = False) -> None:
    """Write a run's record (a failure never replaces a finished record), commit
    a finished one when asked (--git-commit), and say how it went."""
    from nmt_study.runner import read_record, record_path_of, write_record

    path = record_path_of(out, config.name, seed)
    previous = read_record(path)
    if record["status"] == "finished" or not (previous and previous.get("status") == "finished"):
        write_record(path, record)
    figure = record.get("eval", {})
    committed = ""
    if git_commit and record["status"] == "finished":
        from nmt_study.autocommit import commit_record

        committed = "; " + commit_record(
            out, path, f"study ({out.name}): {config.name} seed {seed}, test BLEU {figure['test_bleu']:.2f}"
            + (f", AER {figure['aer']:.3f}" if figure.get("aer") is not None else ""))
    write_stdout(f"nmt_study: [{done}/{total}] {config.name} seed {seed}: {record['status']}"
                 + (f", test BLEU {figure['test_bleu']:.1f}, AER {figure['aer']:.3f}"
                    if record["status"] == "finished" and figure.get("aer") is not None else "")
                 + (f" ({record['reason']})" if record["status"] != "finished" else "") + committed + "\n",
                 keep_going=True)      # the records and the report are the study's outputs


def cli() -> None:
    """The `nmt-study` console command: what `python -m nmt_study` runs."""
    from nmt import run_command

    run_command("nmt_study.__main__", "; finished runs keep their records")
