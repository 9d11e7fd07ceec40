"""Validation BLEU against wall-clock minutes of a run, as a PNG.

    python -m scripts.benchmarks.plot_learning_curve runs/m30k_transformer_small --out benchmarks/m30k_transformer_small_curve.png
    python -m scripts.benchmarks.plot_learning_curve runs/m30k_transformer_small runs/m30k_rnn_bahdanau --out benchmarks/m30k_curves.png

Reads RUN/metrics.jsonl (one record per validation); several runs give one line each. The wall time of each
validation comes from its "validation step N" line in RUN/train.log, counted
from the log's first line; without the log, the record's train_seconds
(training time without validation) is used. A run that has not validated yet
gets its training loss and tokens/s from RUN/tensorboard instead, against
wall-clock minutes since its first logged update. Prints the points and the
command.
"""

import argparse
import re
import shlex
import sys
from datetime import datetime
from pathlib import Path

from nmt.store.metrics_log import read_records
from scripts.out_path import ready_file

STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")
VALIDATION = re.compile(r"validation step (\d+) ")


def wall_minutes(log_path: Path) -> dict[int, float]:
    """step -> minutes from the log's first line to that step's validation line."""
    if not log_path.is_file():
        return {}
    first, points = None, {}
    for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        stamp = STAMP.match(line)
        if not stamp:
            continue
        when = datetime.strptime(stamp[1], "%Y-%m-%d %H:%M:%S,%f")
        first = first or when
        found = VALIDATION.search(line)
        if found:
            points[int(found[1])] = (when - first).total_seconds() / 60
    return points


def bleu_points(run: Path) -> tuple[list[float], list[dict], str]:
    """(minutes, metrics records, axis label) of a run's validations."""
    records = read_records(run)
    walls = wall_minutes(run / "train.log")
    xs = [walls.get(r["step"], r["train_seconds"] / 60) for r in records]
    label = "wall-clock minutes" if all(r["step"] in walls for r in records) else "training minutes"
    return xs, records, label


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "runs", nargs="+", metavar="RUN", help="run folders with metrics.jsonl (and train.log); several share one plot"
    )
    parser.add_argument("--out", help="PNG path (default RUN/learning_curve.png of the first run)")
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [Path(run) for run in args.runs]
    out = ready_file(args.out or runs[0] / "learning_curve.png", "plot_learning_curve")
    curves = {run: bleu_points(run) for run in runs}
    if len(runs) == 1 and not curves[runs[0]][1]:
        return plot_training_loss(runs[0], out, argv, plt)
    print("python -m scripts.benchmarks.plot_learning_curve " + shlex.join(sys.argv[1:] if argv is None else argv))
    fig, ax = plt.subplots(figsize=(7.2, 4.4), dpi=120)
    labels = set()
    for run, (xs, records, label) in curves.items():
        if not records:
            print(f"{run}: no validation in metrics.jsonl yet; left out")
            continue
        labels.add(label)
        print(f"{run}\n{'step':>6} {label:>20} {'BLEU':>6} {'chrF':>6} {'val loss':>8}")
        for x, r in zip(xs, records):
            print(f"{r['step']:>6} {x:>20.1f} {r['bleu']:>6.2f} {r['chrf']:>6.2f} {r['loss']:>8.3f}")
        (line,) = ax.plot(xs, [r["bleu"] for r in records], marker="o", label=run.name)
        last_x, last = xs[-1], records[-1]
        ax.annotate(
            f"{last['bleu']:.1f} (step {last['step']})",
            (last_x, last["bleu"]),
            textcoords="offset points",
            xytext=(-10, 6),
            ha="right",
            fontsize=8,
            color=line.get_color(),
        )
    ax.set_xlabel(" / ".join(sorted(labels)))
    ax.set_ylabel("validation BLEU (greedy, sacreBLEU)")
    ax.set_title("validation BLEU against time" if len(runs) > 1 else f"{runs[0].name}: validation BLEU against time")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    print(f"(plot in {out})")


def plot_training_loss(run: Path, out: Path, argv, plt) -> None:
    """No validation yet: training loss and tokens/s from the TensorBoard scalars."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    scalars = {}
    for path in sorted((run / "tensorboard").glob("events.*")):
        events = EventAccumulator(str(path), size_guidance={"scalars": 0})
        events.Reload()
        for tag in ("train/loss", "train/tokens_per_s"):
            if tag in events.Tags()["scalars"]:
                scalars.setdefault(tag, []).extend(events.Scalars(tag))
    if "train/loss" not in scalars:
        sys.exit(f"{run} has no validation in metrics.jsonl and no train/loss in tensorboard/ yet")
    start = min(e.wall_time for e in scalars["train/loss"])
    loss = [((e.wall_time - start) / 60, e.step, e.value) for e in scalars["train/loss"]]
    speed = {e.step: e.value for e in scalars.get("train/tokens_per_s", [])}
    print("python -m scripts.benchmarks.plot_learning_curve " + shlex.join(sys.argv[1:] if argv is None else argv))
    print(f"no validation yet; training loss from {run}/tensorboard")
    print(f"{'step':>6} {'wall-clock minutes':>20} {'train loss':>10} {'tokens/s':>9}")
    for minutes, step, value in loss:
        print(f"{step:>6} {minutes:>20.1f} {value:>10.3f} {speed.get(step, float('nan')):>9.0f}")

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    ax.plot([m for m, _, _ in loss], [v for _, _, v in loss], marker="o", label="training NLL per token")
    for minutes, step, value in loss:
        ax.annotate(
            f"step {step}, {speed.get(step, float('nan')):.0f} tok/s",
            (minutes, value),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize=7,
        )
    ax.set_xlabel("wall-clock minutes since the first update")
    ax.set_ylabel("training NLL per target token (nats)")
    ax.set_title(f"{run.name}: no validation yet")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    print(f"(plot in {out})")


if __name__ == "__main__":
    main()
