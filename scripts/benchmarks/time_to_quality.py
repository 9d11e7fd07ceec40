"""Time to quality against JoeyNMT 2.3.0: the BLEU its Transformer reaches in M minutes, and
the minutes nmt needs to reach that BLEU (the target: at most 15 of 45).

    python -m scripts.benchmarks.time_to_quality --data ../shared/data/multi30k --minutes 45
    python -m scripts.benchmarks.time_to_quality --smoke          # 2 minutes each, 50 validation sentences

One side-by-side run: both trainings start at the same moment, one core and one thread each,
on the same plain-text Multi30k and the very sentencepiece model nmt trains
(scripts/peers/compare_joeynmt.py's prepare_data, its JoeyNMT venv and its config):

    core 0: taskset -c 0 python -m nmt.train experiment=transformer_small data.path=DATA
            trainer.max_minutes=M trainer.max_steps=100000 trainer.val_every=1000000
            trainer.save_every=S trainer.keep_last=1000000 hydra.run.dir=RUN
    core 1: taskset -c 1 python -m joeynmt train joey_transformer_small.yaml --skip-test
            (compare_joeynmt.joey_config, no validation, and the preset's schedule:
             inverse_sqrt, warm-up 800, peak 1e-3, as JoeyNMT's warmupinversesquareroot)

OMP_NUM_THREADS=MKL_NUM_THREADS=1 on both.

nmt's figure (the default): it trains the M minutes without validating and keeps a step
checkpoint every S updates (trainer.save_every). After the race each is scored on core 0
as nmt's validation scores (nmt.translator greedy search with the checkpoint's length
limits, the run's validation pairs, sacreBLEU), at the minute the checkpoint was written
(its mtime since the common start): every 4th checkpoint and the last for the curve, then,
once JoeyNMT's BLEU is known, every one between the last scored below it and the first
scored at or above it, so the crossing is exact to S updates. S is a quarter of the updates
that take --val-every-minutes on nmt's side, from the seconds per update that
scripts/peers/compare_joeynmt.py measured (benchmarks/compare_joeynmt.json); --nmt-save-every
sets it outright. --nmt-val-every V instead validates every V updates during the race and
pays for each validation in nmt's own minutes (the method of the runs before 2026-11-25 15:00).

JoeyNMT's figure (the default): it trains the M minutes without validating and is then
stopped by SIGINT, on which JoeyNMT 2.3.0 saves the weights it has (training.py catches
KeyboardInterrupt and saves a checkpoint in `finally`). After the race, `joeynmt test`
scores those weights as its validations would (greedy, the same validation set and
sacreBLEU settings, core 1, one thread): its BLEU after M minutes of training, no minute
of them spent validating. --joey-val-every N instead validates every N updates during the
race, for its learning curve, paying for each validation in its own minutes (an untrained
model's validation took JoeyNMT 12 minutes on one core; see below).
compare_joeynmt.py times both sides at the machine's thread count (2 here) and this script
runs each on one thread, so the minutes are longer by the same factor on both sides: in
the 45-minute run of 2026-11-25 an update took 1.7 times as long on each, and the default
3-minute cadence validated about every 5.5 minutes.

Stopping JoeyNMT: 2.3.0 has no wall-clock limit (its loop stops on `updates`, `epochs` or a
minimum learning rate only; training.py). The script sends it SIGINT (with --joey-val-every,
SIGTERM) M minutes after the start, SIGKILL if it still runs 120 s (30 s) later. A validation
that was under way then would have finished after M minutes, so it would not count anyway. nmt stops itself:
trainer.max_minutes ends training after M minutes, then it validates one last time.

Clock: wall-clock minutes since the common start, for both sides, when the validation's
score is logged (nmt: its "validation step N" line in RUN/train.log, BLEU from
RUN/metrics.jsonl; JoeyNMT: its "Evaluation result" line in MODEL/train.log, the step from
the "Step:" line before it). Everything a user waits for is on it: start-up, training and
the validations themselves. It is the clock the budget is on (JoeyNMT is stopped by it),
and it needs no bookkeeping that the two toolkits do differently (nmt's train_seconds
leaves out batching; JoeyNMT's timer leaves out checkpoint saving). Each side pays for
its own validations at the same cadence; the JSON keeps nmt's train_seconds and
JoeyNMT's generation_seconds per point, and the printed tables the minutes each side
spent not training before each validation, to show what validation cost. An untrained
model writes every translation to the length limit, and JoeyNMT 2.3.0's greedy search
recomputes the whole prefix at each step: on 1014 sentences one early validation took it
12 minutes on one core (benchmarks/RESULTS.md §8). --joey-val-every N with N about the
updates it makes in the budget lets it validate once, near the end: its best figure.

BLEU: both validate greedily on the whole validation set (1014 sentences; --val-sentences
N: the first N on both sides) and score with sacreBLEU 2.6.0's corpus BLEU, default
13a tokenisation, mixed case, exp smoothing, on detokenised output (sentencepiece decoded)
against the raw reference lines. JoeyNMT 2.3.0 does so in prediction.evaluate (metrics.bleu,
BLEU(tokenize="13a") from the config's sacrebleu_cfg); nmt in nmt.training.validation.
Left different: the output length limit (JoeyNMT 100 subwords, nmt 1.5 * source + 10)
and JoeyNMT writing <unk> as sentencepiece's " ⁇ ". Both signatures go into the JSON.

Figures: JoeyNMT's BLEU after the M minutes (with --joey-val-every: its best validation
BLEU logged within them), and the minute of nmt's first scored checkpoint (with
--nmt-val-every: validation) at or above it (a measured point, not an interpolation
between two; None if nmt never reaches it). If JoeyNMT's side fails after the race, nmt's
curve is written all the same, with the failure, and the script exits 1. Writes the points, the figures, both commands, the
date, the machine and the commit as JSON, and both curves in one PNG.
"""

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from nmt import cpu_description, read_cpuinfo
from nmt.base.cli_checks import finite_float  # nan and inf refused
from nmt.base.provenance import git_commit
from nmt.store.metrics_log import read_records
from scripts.benchmarks.plot_learning_curve import STAMP, VALIDATION  # nmt's train.log lines
from scripts.out_path import ready_file
from scripts.peers import compare_joeynmt as joey  # JoeyNMT's venv, the shared data and its config

ROOT = Path(__file__).resolve().parents[2]

PRESET = "transformer_small"
TARGET_MINUTES = 15
NEVER = 10**6  # nmt's val_every and keep_last when its checkpoints are scored after the race
SCORED_EVERY = 4  # nmt saves 4 checkpoints per validation cadence; every 4th is scored for the curve
LOG_TIME = "%Y-%m-%d %H:%M:%S,%f"
# 2026-11-24 22:05:01,123 - INFO - joeynmt.prediction - Evaluation result (greedy): bleu:  21.30, loss: ...
JOEY_GENERATION = re.compile(r" - INFO - \S+ - Generation took ([\d.]+)\[sec\]")
JOEY_RESULT = re.compile(r"^(\S+ \S+) - INFO - \S+ - Evaluation result \([\w ]+\): bleu:\s*([\d.]+)")
# 2026-11-25 13:20:01,123 - INFO - joeynmt.training - Interrupt at epoch 3, step 612.
JOEY_INTERRUPT = re.compile(r"^(\S+ \S+) - INFO - \S+ - Interrupt at epoch \d+, step (\d+)\.")


class Point(NamedTuple):
    """One validation: the update it followed, minutes since the common start, BLEU."""

    step: int
    minutes: float
    bleu: float


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(joey.MULTI30K), help="Multi30k folder (data.path)")
    parser.add_argument("--minutes", type=finite_float, help="wall-clock budget of each side (default 45; smoke 2)")
    parser.add_argument(
        "--val-every-minutes",
        type=finite_float,
        help="validation cadence of both sides, in minutes of compare_joeynmt's timing at its "
        "thread count (default 3; smoke 0.5); at one thread each, about 1.7 times longer",
    )
    parser.add_argument(
        "--nmt-save-every",
        type=int,
        help="nmt saves a checkpoint every N updates (trainer.save_every) without validating; "
        "they are scored after the race (default: every quarter of the validation cadence)",
    )
    parser.add_argument(
        "--nmt-val-every",
        type=int,
        help="instead, nmt validates every N updates during the race, paying for each "
        "validation in its own minutes (its trainer.val_every)",
    )
    parser.add_argument(
        "--joey-val-every",
        type=int,
        help="JoeyNMT validates every N updates during the minutes (its learning curve, at the "
        "cost of its validations); default: it trains without validating, is stopped by "
        "SIGINT at the end and its last weights are scored after the race",
    )
    parser.add_argument("--val-sentences", type=int, help="validate on the first N sentences (default all; smoke 50)")
    parser.add_argument(
        "--nmt-override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one more Hydra override for nmt's run, e.g. trainer.precision=bf16 (repeatable; "
        "its cadence comes from compare_joeynmt.py --variant with the same overrides)",
    )
    parser.add_argument(
        "--speeds",
        default=str(ROOT / "benchmarks" / "compare_joeynmt.json"),
        help="compare_joeynmt.py's JSON: seconds per update of each side",
    )
    parser.add_argument("--venv", default=str(ROOT / ".bench" / "joeynmt-venv"))
    parser.add_argument("--work", default="/tmp/nmt-joeynmt-ttq", help="data, configs and both runs")
    parser.add_argument("--out-json", help="default benchmarks/time_to_quality.json (smoke: in --work)")
    parser.add_argument("--out-png", help="default benchmarks/time_to_quality.png (smoke: in --work)")
    parser.add_argument(
        "--smoke",
        "--dry-run",
        action="store_true",
        help="a quick check: 2 minutes each, 50 validation sentences, outputs in --work",
    )
    args = parser.parse_args(argv)
    smoke = args.smoke
    args.minutes = args.minutes or (2.0 if smoke else 45.0)
    args.val_every_minutes = args.val_every_minutes or (0.5 if smoke else 3.0)
    args.val_sentences = args.val_sentences or (50 if smoke else None)
    outputs = Path(args.work) if smoke else ROOT / "benchmarks"
    args.out_json = str(ready_file(args.out_json or outputs / "time_to_quality.json", "time_to_quality", "--out-json"))
    args.out_png = str(ready_file(args.out_png or outputs / "time_to_quality.png", "time_to_quality", "--out-png"))
    return args


def updates_in(minutes: float, seconds_per_update: float) -> int:
    """Updates that take `minutes` at `seconds_per_update`, rounded, at least 1."""
    return max(1, round(60 * minutes / seconds_per_update))


def run_precision(overrides: list[str] = ()) -> str:
    """The precision nmt's side trains in here: the preset's trainer.precision with the
    overrides, `auto` resolved for this machine's CPU as the trainer resolves it."""
    import torch

    from nmt.training.precision import resolve_precision
    from scripts.benchmarks.bench_train import compose_config

    cfg = compose_config(PRESET, list(overrides))
    return resolve_precision(str(cfg.trainer.precision), torch.device("cpu"))


def timed_precision(records: list[dict], side: str) -> str:
    """The precision a compare_joeynmt.py side was timed in: its records say so; records
    from before they did were timed with the presets' default of then (fp32) unless the
    side's overrides set trainer.precision."""
    recorded = {r["precision"] for r in records if "precision" in r}
    if recorded:
        return recorded.pop() if len(recorded) == 1 else "mixed"
    named = [o.split("=", 1)[1] for o in side.split()[1:] if o.startswith("trainer.precision=")]
    return named[-1] if named else "fp32"


def seconds_per_update(speeds: Path, overrides: list[str] = (), precision: str = "fp32") -> tuple[float, float]:
    """(nmt, JoeyNMT) seconds per update of transformer_small in compare_joeynmt.py's JSON;
    nmt's of the side timed with the same overrides (--variant) and in `precision` (what
    this run trains in; the side's trainer.precision override may be there or not); a side
    timed in another precision is refused (the cadence would be off by the speed-up)."""
    if not speeds.is_file():
        sys.exit(f"{speeds} not found; run scripts/peers/compare_joeynmt.py or pass --nmt-val-every and --joey-val-every")
    figures = json.loads(speeds.read_text())
    runs = figures["runs"][PRESET]
    # the same run, however its precision is said: as given, without trainer.precision, with it
    others = [o for o in overrides if not o.startswith("trainer.precision=")]
    named = dict.fromkeys(
        " ".join(["ours", *o]) for o in (overrides, others, [*others, f"trainer.precision={precision}"])
    )
    present = [side for side in named if side in runs]
    if not present:
        sys.exit(
            f"{speeds} has no nmt side timed with {' '.join(overrides)}; run scripts/peers/compare_joeynmt.py "
            f"--variant '{' '.join(overrides)}' or pass --nmt-val-every"
        )
    matching = [side for side in present if timed_precision(runs[side], side) == precision]
    if not matching:
        side, timed = present[0], timed_precision(runs[present[0]], present[0])
        sys.exit(
            f"{speeds}: its nmt side '{side}' was timed in {timed}, but this run trains in {precision}; "
            f"pass --nmt-override trainer.precision={timed} to run as timed, run scripts/peers/compare_joeynmt.py "
            "again, or pass --nmt-val-every"
        )
    side = matching[0]
    mean = lambda name: sum(r["seconds"] for r in runs[name]) / len(runs[name]) / figures["steps"]
    return mean(side), mean("joeynmt")


def cadences(args) -> tuple[int | None, int | None, int | None]:
    """(nmt's val_every, nmt's save_every, JoeyNMT's validation_freq) in updates.
    nmt: --nmt-val-every validates during the race (save_every None); otherwise it saves
    a checkpoint every --nmt-save-every updates, scored after the race (val_every None).
    JoeyNMT's is None (no validation during the race) unless --joey-val-every sets it."""
    if args.nmt_val_every:
        return args.nmt_val_every, None, args.joey_val_every
    if args.nmt_save_every:
        return None, args.nmt_save_every, args.joey_val_every
    ours, _ = seconds_per_update(Path(args.speeds), args.nmt_override, run_precision(args.nmt_override))
    return None, updates_in(args.val_every_minutes / SCORED_EVERY, ours), args.joey_val_every


def first_lines(prefix: Path, target: Path, n: int) -> Path:
    """TARGET.{de,en}: the first n lines of PREFIX.{de,en} (nmt's val_max_sentences=n)."""
    for lang in ("de", "en"):
        lines = prefix.with_name(f"{prefix.name}.{lang}").read_text(encoding="utf-8").splitlines(True)
        target.with_name(f"{target.name}.{lang}").write_text("".join(lines[:n]), encoding="utf-8")
    return target


def nmt_command(
    data: Path,
    minutes: float,
    val_every: int | None,
    run_dir: Path,
    val_sentences: int | None,
    overrides: list[str] = (),
    save_every: int | None = None,
) -> list[str]:
    """nmt's training command: validating every `val_every` updates, or (`save_every`) not
    validating before its budget is spent and keeping a step checkpoint every `save_every`."""
    cadence = (
        [f"trainer.val_every={val_every}"]
        if val_every
        else [f"trainer.val_every={NEVER}", f"trainer.save_every={save_every}", f"trainer.keep_last={NEVER}"]
    )
    command = [
        sys.executable,
        "-m",
        "nmt.train",
        f"experiment={PRESET}",
        f"data.path={data}",
        f"trainer.max_minutes={minutes}",
        "trainer.max_steps=100000",
        *cadence,
        f"hydra.run.dir={run_dir}",
    ]
    return command + ([f"trainer.val_max_sentences={val_sentences}"] if val_sentences else []) + list(overrides)


def run_pairs(run_dir: Path, split: str) -> list[tuple[str, str]]:
    """A split ("valid" or "test") of an nmt run's corpus, from its data config, lines with
    an empty source dropped (as nmt.data.pipeline.prepare_data drops them)."""
    from omegaconf import OmegaConf

    from nmt.data.corpora import load_corpus

    cfg = OmegaConf.load(run_dir / ".hydra" / "config.yaml")
    return [(src, tgt) for src, tgt in getattr(load_corpus(cfg.data), split) if src.strip()]


def validation_pairs(run_dir: Path, val_sentences: int | None) -> list[tuple[str, str]]:
    """The pairs nmt's run validates on: its validation split, the first N."""
    pairs = run_pairs(run_dir, "valid")
    return pairs[:val_sentences] if val_sentences else pairs


def score_checkpoint(path: Path, pairs: list[tuple[str, str]]) -> tuple[float, str]:
    """(BLEU, signature) of one checkpoint, as nmt's validation scores: greedy search with
    the checkpoint's length limits, sacreBLEU on the detokenised output."""
    from nmt.base.scoring import score_translations
    from nmt.translator import Translator

    outputs = Translator.from_checkpoint(path, device="cpu").translate([src for src, _ in pairs], beam_size=1)
    bleu, _, signature, _ = score_translations([o.text for o in outputs], [tgt for _, tgt in pairs])
    return bleu, signature


class Saved(NamedTuple):
    """One step checkpoint of nmt's run: its update, the minute it was written (its mtime,
    since the common start) and the minutes of training in it (progress.train_seconds)."""

    step: int
    minutes: float
    train_minutes: float
    path: Path


def saved_checkpoints(run_dir: Path, start: datetime, minutes: float) -> list[Saved]:
    """nmt's step_N.pt written within the budget, in step order."""
    import torch

    from nmt.store.checkpoints import step_checkpoints

    saved = []
    for path in step_checkpoints(run_dir / "checkpoints"):
        written = (datetime.fromtimestamp(path.stat().st_mtime) - start).total_seconds() / 60
        if written <= minutes:
            progress = torch.load(path, map_location="cpu", weights_only=True, mmap=True)["progress"]
            saved.append(Saved(int(progress["step"]), written, progress["train_seconds"] / 60, path))
    return saved


def to_score(saved: list[Saved], every: int, scored: dict[int, float], target: float | None) -> list[Saved]:
    """Which checkpoints to score next: first every `every`-th and the last (the curve);
    once the target BLEU is known, those between the last scored one below it and the
    first scored one at or above it (the crossing, to the checkpoint)."""
    if target is None:
        picked = saved[every - 1 :: every] + saved[-1:]
    else:
        ordered = [c for c in saved if c.step in scored]
        above = next((c for c in ordered if scored[c.step] >= target), None)
        if above is None:
            return []
        below = max((c.step for c in ordered if c.step < above.step), default=0)
        picked = [c for c in saved if below < c.step < above.step]
    return [c for c in dict.fromkeys(picked) if c.step not in scored]


def score_saved(run_dir: Path, saved: list[Saved], scored: dict[int, float], pairs) -> str | None:
    """Score `saved` into `scored` (step -> BLEU) on this process's core; the signature."""
    signature = None
    for checkpoint in saved:
        scored[checkpoint.step], signature = score_checkpoint(checkpoint.path, pairs)
        print(
            f"  nmt step {checkpoint.step} ({checkpoint.minutes:.1f} min): BLEU {scored[checkpoint.step]:.2f}",
            flush=True,
        )
    return signature


def joey_setup(args, work: Path, val_every: int | None) -> tuple[list[str], Path, dict]:
    """JoeyNMT's venv, data and config: its train command, its log's path and the config
    (val_every None: it never validates while training)."""
    import yaml

    python = joey.ensure_venv(Path(args.venv))
    spm_path, vocab_path = joey.prepare_data(Path(args.data).resolve(), work)
    dev = work / "data" / "val"
    if args.val_sentences:
        dev = first_lines(dev, work / "data" / f"val_first{args.val_sentences}", args.val_sentences)
    config = joey.joey_config(
        PRESET,
        work,
        spm_path,
        vocab_path,
        updates=10**7,
        validation_freq=val_every or 10**9,
        same_schedule=True,
        dev=dev,
    )
    path = work / f"joey_{PRESET}_ttq.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return (
        [str(python), "-m", "joeynmt", "train", str(path), "--skip-test"],
        Path(config["model_dir"]) / "train.log",
        config,
    )


def joey_test_config(config: dict, checkpoint: Path) -> dict:
    """JoeyNMT's config for scoring one checkpoint as its validations do: greedy, on the dev
    set alone (no test set), the same BLEU settings."""
    data = {key: value for key, value in config["data"].items() if key != "test"}
    return {**config, "data": data, "testing": {**config["testing"], "beam_size": 1, "load_model": str(checkpoint)}}


def joey_interrupt(log: str) -> tuple[str, int] | None:
    """(time, step) of JoeyNMT 2.3.0's "Interrupt at epoch E, step N." line: where SIGINT
    stopped its training (it then saves those weights as MODEL/N.ckpt)."""
    for line in log.splitlines():
        found = JOEY_INTERRUPT.search(line)
        if found:
            return found[1], int(found[2])
    return None


def joey_score_at_end(python: str, config: dict, work: Path, start: datetime, how: str = "SIGINT") -> Point:
    """JoeyNMT's weights at the moment SIGINT stopped it, scored after the race with
    `joeynmt test` on core 1, one thread: a Point at the minute of the interrupt."""
    import yaml

    model_dir = Path(config["model_dir"])
    stopped = joey_interrupt((model_dir / "train.log").read_text(encoding="utf-8", errors="replace"))
    if stopped is None:
        sys.exit(
            f"{model_dir / 'train.log'} has no 'Interrupt at epoch E, step N.' line: JoeyNMT "
            f"did not stop at SIGINT as 2.3.0 does (it ended by {how}), so there are no weights to score"
        )
    stamp, step = stopped
    checkpoint = model_dir / f"{step}.ckpt"
    if not checkpoint.is_file():
        sys.exit(f"JoeyNMT stopped at step {step} but {checkpoint} is missing")
    path = work / f"joey_{PRESET}_ttq_test.yaml"
    path.write_text(yaml.safe_dump(joey_test_config(config, checkpoint), sort_keys=False))
    result = subprocess.run(
        pinned(1, [python, "-m", "joeynmt", "test", str(path)]),
        cwd=work,
        env=one_thread_env(),
        capture_output=True,
        text=True,
    )
    scores = [float(m[2]) for m in map(JOEY_RESULT.search, (result.stdout + result.stderr).splitlines()) if m]
    if result.returncode or not scores:
        sys.exit(f"failed ({result.returncode}): joeynmt test {path}\n{(result.stdout + result.stderr)[-3000:]}")
    return Point(step, minutes_since(stamp, start), scores[0])


def pinned(core: int, command: list[str]) -> list[str]:
    return ["taskset", "-c", str(core), *command]


def one_thread_env() -> dict:
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "TQDM_DISABLE": "1",
        "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1",
    }  # JoeyNMT 2.3.0 loads its own checkpoints


def stop(process: subprocess.Popen, grace_s: float = 30, sig: int = signal.SIGTERM) -> str:
    """`sig` (SIGTERM), then SIGKILL after grace_s: which one ended it."""
    if process.poll() is not None:
        return f"had ended (exit {process.returncode})"
    process.send_signal(sig)
    try:
        process.wait(grace_s)
        return signal.Signals(sig).name
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return "SIGKILL"


def failed(process: subprocess.Popen) -> bool:
    return process.poll() not in (None, 0)


def give_up(process: subprocess.Popen, out: Path, others: list[subprocess.Popen]) -> None:
    """Stop the others and exit with the failed command and the end of its output."""
    for other in others:
        stop(other)
    sys.exit(f"failed ({process.returncode}): {shlex.join(process.args)}\n{out.read_text(errors='replace')[-3000:]}")


def default_sigint() -> None:
    """In the child before it execs: SIGINT back to its default. A shell starts a background
    job (`cmd &`) with SIGINT ignored, children inherit that, and a Python started with
    SIGINT ignored never turns it into KeyboardInterrupt: JoeyNMT would not stop on it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def race(
    nmt: list[str], theirs: list[str], minutes: float, work: Path, interrupt: bool = False
) -> tuple[datetime, str]:
    """Both trainings side by side from the same moment; JoeyNMT stopped after `minutes`, by
    SIGTERM, or with `interrupt` by SIGINT, on which JoeyNMT 2.3.0 saves its weights
    (training.py: KeyboardInterrupt, then _save_checkpoint in `finally`).
    Returns the start (local time, as both logs write it) and what stopped JoeyNMT."""
    env = one_thread_env()
    nmt_out, joey_out = work / "nmt.out", work / "joeynmt.out"
    with nmt_out.open("w") as to_ours, joey_out.open("w") as to_rival:
        start = datetime.now()
        ours = subprocess.Popen(pinned(0, nmt), cwd=ROOT, env=env, stdout=to_ours, stderr=subprocess.STDOUT)
        rival = subprocess.Popen(
            pinned(1, theirs), cwd=work, env=env, stdout=to_rival, stderr=subprocess.STDOUT, preexec_fn=default_sigint
        )
        deadline = time.monotonic() + 60 * minutes
        while time.monotonic() < deadline and not failed(ours) and not failed(rival):
            time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))
        if failed(rival):
            give_up(rival, joey_out, [ours])
        how = stop(rival, 120, signal.SIGINT) if interrupt else stop(rival)
        try:
            ours.wait(60 * minutes + 900)  # its own budget is spent too: one last validation
        except subprocess.TimeoutExpired:
            stop(ours)
    if ours.returncode:
        give_up(ours, nmt_out, [])
    return start, how


def minutes_since(stamp: str, start: datetime) -> float:
    return (datetime.strptime(stamp, LOG_TIME) - start).total_seconds() / 60


def nmt_records(run_dir: Path) -> list[dict]:
    """RUN/metrics.jsonl: one record per validation."""
    return read_records(run_dir)


def nmt_points(run_dir: Path, start: datetime) -> list[Point]:
    """nmt's validations: BLEU from RUN/metrics.jsonl, time of the "validation step N" line in RUN/train.log."""
    logged = {}
    for line in (run_dir / "train.log").read_text(encoding="utf-8", errors="replace").splitlines():
        stamp, found = STAMP.match(line), VALIDATION.search(line)
        if stamp and found:
            logged[int(found[1])] = minutes_since(stamp[1], start)
    return [Point(r["step"], logged[r["step"]], r["bleu"]) for r in nmt_records(run_dir) if r["step"] in logged]


def joey_points(log: str, start: datetime) -> list[Point]:
    """JoeyNMT 2.3.0's validations from its train.log: each "Evaluation result" line's time
    and BLEU, the step of the last "Step:" line before it."""
    points, step = [], None
    for line in log.splitlines():
        progress = joey.STEP_LINE.search(line)
        if progress:
            step = int(progress[2])
        found = JOEY_RESULT.search(line)
        if found and step is not None:
            points.append(Point(step, minutes_since(found[1], start), float(found[2])))
    return points


def joey_generation_seconds(log: str) -> dict[int, float]:
    """step -> seconds JoeyNMT 2.3.0 spent generating that validation's translations (its
    "Generation took X[sec]." line; the step of the last "Step:" line before it)."""
    seconds, step = {}, None
    for line in log.splitlines():
        progress = joey.STEP_LINE.search(line)
        if progress:
            step = int(progress[2])
        found = JOEY_GENERATION.search(line)
        if found and step is not None:
            seconds[step] = float(found[1])
    return seconds


def joey_signature(log: str) -> str | None:
    """The sacreBLEU signature JoeyNMT logs with each BLEU."""
    for line in log.splitlines():
        if "nrefs:" in line and "|tok:" in line:
            return line.split(" - ")[-1].strip()
    return None


def joey_bleu_signature(train_log: Path) -> str | None:
    """The signature of JoeyNMT's BLEU: from its train.log's validations, or, when it was
    scored after the race, from the test.log `joeynmt test` writes beside it."""
    for log in (train_log, train_log.with_name("test.log")):
        if log.is_file():
            found = joey_signature(log.read_text(encoding="utf-8", errors="replace"))
            if found:
                return found
    return None


def best_within(points: list[Point], minutes: float) -> Point | None:
    """The highest BLEU logged by `minutes` (the earliest of equals)."""
    inside = [p for p in points if p.minutes <= minutes]
    return max(inside, key=lambda p: (p.bleu, -p.minutes)) if inside else None


def first_reaching(points: list[Point], bleu: float) -> Point | None:
    """The first validation (in time) with BLEU >= bleu."""
    return next((p for p in sorted(points, key=lambda p: p.minutes) if p.bleu >= bleu), None)


def machine() -> dict:
    return {
        "cpu": cpu_description(read_cpuinfo()),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def plot(
    nmt: list[Point],
    theirs: list[Point],
    target: Point | None,
    reached: Point | None,
    minutes: float,
    title: str,
    ylabel: str,
    out: Path,
    at_end: bool = False,
    xlabel: str = "wall-clock minutes since both started (validation included)",
    nmt_label: str = "nmt",
) -> None:
    """Both learning curves, JoeyNMT's M-minute BLEU dashed, nmt's minute reaching it marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    ax.plot([p.minutes for p in nmt], [p.bleu for p in nmt], marker="o", color="tab:blue", label=nmt_label)
    ax.plot(
        [p.minutes for p in theirs], [p.bleu for p in theirs], marker="s", color="tab:orange", label="JoeyNMT 2.3.0"
    )
    if target:
        ax.axhline(
            target.bleu,
            color="tab:orange",
            linestyle="--",
            linewidth=1,
            label=f"JoeyNMT {'after' if at_end else 'best within'} {minutes:g} min: BLEU {target.bleu:.2f}",
        )
    if reached:
        ax.axvline(
            reached.minutes,
            color="tab:blue",
            linestyle=":",
            linewidth=1.5,
            label=f"nmt reaches it: {reached.minutes:.1f} min (step {reached.step})",
        )
    ax.axvline(minutes, color="grey", linewidth=0.8, alpha=0.6, label=f"budget: {minutes:g} min")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(xlabel, fontsize=11)
    ax.set_ylabel(ylabel, fontsize=11)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)


def nmt_label(overrides: list[str]) -> str:
    """nmt's legend entry: the preset, and the overrides it ran with."""
    return f"nmt {PRESET}" + (f" ({', '.join(overrides)})" if overrides else "")


def outside_training(points: list[Point], train_minutes_at: dict[int, float]) -> dict[int, float]:
    """step -> nmt's wall-clock minutes since the previous point (or the start) that were
    not training: validations, checkpoints, and before the first one, start-up."""
    out, wall, trained = {}, 0.0, 0.0
    for point in points:
        train_minutes = train_minutes_at[point.step]
        out[point.step] = (point.minutes - wall) - (train_minutes - trained)
        wall, trained = point.minutes, train_minutes
    return out


def table(name: str, points: list[Point], validation_minutes: dict[int, float]) -> str:
    """One side's validations; the last column: minutes not training before each (nmt:
    outside_training; JoeyNMT: its generation time)."""
    rows = [f"{name}\n{'step':>7} {'minutes':>8} {'BLEU':>6} {'not training':>13}"]
    rows += [
        f"{p.step:>7} {p.minutes:>8.2f} {p.bleu:>6.2f} "
        + (f"{validation_minutes[p.step]:>13.2f}" if p.step in validation_minutes else f"{'?':>13}")
        for p in points
    ]
    return "\n".join(rows)


@contextmanager
def on_core(core: int):
    """This process on one core and one torch thread (nmt's scoring beside JoeyNMT's)."""
    import torch

    cores, threads = os.sched_getaffinity(0), torch.get_num_threads()
    os.sched_setaffinity(0, {core})
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        os.sched_setaffinity(0, cores)


def score_both(
    args, run_dir: Path, start: datetime, theirs: list[str], joey_cfg: dict, work: Path, how: str, log: str
) -> tuple[list[Point], dict[int, float], str | None, list[Point], str | None]:
    """After the race: nmt's saved checkpoints scored on core 0 while `joeynmt test` scores
    JoeyNMT's weights on core 1. Returns nmt's points, its train minutes by step, its BLEU
    signature, JoeyNMT's points and JoeyNMT's failure (None when it was scored)."""
    saved = saved_checkpoints(run_dir, start, args.minutes)
    if not saved:
        sys.exit(f"nmt saved no step checkpoint within {args.minutes:g} minutes in {run_dir / 'checkpoints'}")
    pairs, scored, failure, rival = validation_pairs(run_dir, args.val_sentences), {}, None, []
    print(
        f"scoring {len(saved)} nmt checkpoints (every {SCORED_EVERY}th, then around the crossing) on core 0"
        + (", JoeyNMT's weights on core 1" if args.joey_val_every is None else ""),
        flush=True,
    )
    with on_core(0), ThreadPoolExecutor(1) as pool:
        joey = (
            pool.submit(joey_score_at_end, theirs[0], joey_cfg, work, start, how)
            if args.joey_val_every is None
            else None
        )
        signature = score_saved(run_dir, to_score(saved, SCORED_EVERY, scored, None), scored, pairs)
        try:
            rival = [joey.result()] if joey else joey_points(log, start)
        except SystemExit as error:  # JoeyNMT's side failed: nmt's curve is still written
            failure = str(error.code)
        target = (rival[0] if joey else best_within(rival, args.minutes)) if rival else None
        if target:
            score_saved(run_dir, to_score(saved, SCORED_EVERY, scored, target.bleu), scored, pairs)
    points = [Point(c.step, c.minutes, scored[c.step]) for c in saved if c.step in scored]
    return points, {c.step: c.train_minutes for c in saved}, signature, rival, failure


def main(argv=None) -> dict:
    args = parse_args(argv)
    command = "python -m scripts.benchmarks.time_to_quality " + shlex.join(sys.argv[1:] if argv is None else argv)
    work, data = Path(args.work), Path(args.data).resolve()
    work.mkdir(parents=True, exist_ok=True)
    nmt_every, save_every, joey_every = cadences(args)
    theirs, joey_log, joey_cfg = joey_setup(args, work, joey_every)
    at_end = joey_every is None
    run_dir = work / "nmt_run"
    shutil.rmtree(run_dir, ignore_errors=True)  # ours, from an earlier run of this script
    ours = nmt_command(data, args.minutes, nmt_every, run_dir, args.val_sentences, args.nmt_override, save_every)
    print(
        f"{args.minutes:g} minutes each, side by side; nmt "
        + (
            f"validates every {nmt_every} updates"
            if nmt_every
            else f"saves a checkpoint every {save_every} updates, scored after the race"
        )
        + ", JoeyNMT "
        + ("once, its weights at the end" if at_end else f"every {joey_every} updates"),
        flush=True,
    )
    commit = git_commit()  # the code that races, before anything is committed beside it
    start, how = race(ours, theirs, args.minutes, work, interrupt=at_end)

    log = joey_log.read_text(encoding="utf-8", errors="replace")
    failure = None
    if save_every:
        nmt, train_minutes, signature, rival, failure = score_both(
            args, run_dir, start, theirs, joey_cfg, work, how, log
        )
    else:
        nmt = nmt_points(run_dir, start)
        by_step = {r["step"]: r for r in nmt_records(run_dir)}
        train_minutes = {step: r["train_seconds"] / 60 for step, r in by_step.items()}
        signature = next(iter(by_step.values()), {}).get("bleu_signature")
        # at_end: the minute of its last update, scored after the race (not counted in it)
        rival = [joey_score_at_end(theirs[0], joey_cfg, work, start, how)] if at_end else joey_points(log, start)
    target = (rival[0] if at_end else best_within(rival, args.minutes)) if rival else None
    reached = first_reaching(nmt, target.bleu) if target else None
    cpu = machine()
    sentences = args.val_sentences or "all 1014"
    figures = {
        "joeynmt_bleu": target.bleu if target else None,
        "joeynmt_bleu_at": target._asdict() if target else None,
        "nmt_minutes_to_it": reached.minutes if reached else None,
        "nmt_reaching_point": reached._asdict() if reached else None,
        "target_minutes": TARGET_MINUTES,
        "met": bool(reached and reached.minutes <= TARGET_MINUTES),
    }
    generation = joey_generation_seconds(log)
    if save_every:
        clock = (
            "wall-clock minutes since both started: nmt's points when each checkpoint was written "
            f"(every {save_every} updates; scored after the race, every {SCORED_EVERY}th and those around "
            "the crossing), JoeyNMT's when SIGINT stopped its training (scored after the race)"
        )
        crossing = "nmt's first scored checkpoint with BLEU >= JoeyNMT's"
    else:
        clock = "wall-clock minutes since both started, when each validation's score is logged" + (
            "; JoeyNMT's point: when SIGINT stopped its training (scored after the race)" if at_end else ""
        )
        crossing = "nmt's first validation with BLEU >= JoeyNMT's best within the minutes"
    record = {
        "command": command,
        "date": start.isoformat(timespec="seconds"),
        "machine": cpu,
        "commit": commit,
        "smoke": args.smoke,
        "minutes": args.minutes,
        "validation_sentences": sentences,
        "clock": clock,
        "crossing": crossing,
        **figures,
        "nmt": {
            "command": shlex.join(pinned(0, ours)),
            "val_every": nmt_every,
            "save_every": save_every,
            "scored": "after the race: each checkpoint greedy on the validation set, as nmt's validation"
            if save_every
            else "its validations during the race",
            "run_dir": str(run_dir),
            "precision": run_precision(args.nmt_override),
            "bleu_signature": signature,
            "points": [{**p._asdict(), "train_minutes": train_minutes.get(p.step)} for p in nmt],
        },
        "joeynmt": {
            "command": shlex.join(pinned(1, theirs)),
            "validation_freq": joey_every,
            "scored": "after the race: `joeynmt test` of the weights SIGINT left, greedy, the same validation set"
            if at_end
            else "its validations during the race",
            "stopped_by": how,
            "log": str(joey_log),
            "bleu_signature": joey_bleu_signature(joey_log),
            **({"failed": failure} if failure else {}),
            "points": [{**p._asdict(), "generation_seconds": generation.get(p.step)} for p in rival],
        },
    }
    out_json, out_png = Path(args.out_json), Path(args.out_png)
    out_json.write_text(json.dumps(record, indent=1) + "\n")
    title = (
        f"Time to quality, {PRESET}, Multi30k de-en, one core each{' (smoke)' if args.smoke else ''}\n"
        f"{cpu['cpu']}, nmt {commit}, {start:%Y-%m-%d}"
    )
    xlabel = (
        "wall-clock minutes of training since both started (both scored after the race)"
        if save_every and at_end
        else "wall-clock minutes since both started (validation included)"
    )
    plot(
        nmt,
        rival,
        target,
        reached,
        args.minutes,
        title,
        f"validation BLEU (greedy, sacreBLEU 13a, {sentences} sentences)",
        out_png,
        at_end,
        xlabel,
        nmt_label(args.nmt_override),
    )

    ours_validating = outside_training(nmt, train_minutes)
    theirs_validating = {step: seconds / 60 for step, seconds in generation.items()}
    print(
        f"\n{command}\n\n{table('nmt', nmt, ours_validating)}\n\n"
        f"{table(f'JoeyNMT (stopped by {how})', rival, theirs_validating)}\n"
    )
    if failure:
        print(f"JoeyNMT's side failed after the race; nmt's curve is in {out_json}:\n{failure}")
    elif target is None:
        print(f"JoeyNMT logged no validation within {args.minutes:g} minutes")
    else:
        print(
            f"JoeyNMT's BLEU {'after' if at_end else 'best within'} {args.minutes:g} minutes: {target.bleu:.2f} "
            f"(step {target.step}, {target.minutes:.1f} min"
            + (", its weights when SIGINT stopped it, scored after the race)" if at_end else ")")
        )
        print(
            f"nmt's first {'checkpoint' if save_every else 'validation'} at or above it: "
            + (
                f"{reached.minutes:.1f} min (step {reached.step}, BLEU {reached.bleu:.2f}); target <= "
                f"{TARGET_MINUTES} min: {'met' if figures['met'] else 'not met'}"
                if reached
                else "never"
            )
        )
    print(f"(figures in {out_json}, plot in {out_png})")
    if failure:
        sys.exit(1)
    return record


if __name__ == "__main__":
    main()
