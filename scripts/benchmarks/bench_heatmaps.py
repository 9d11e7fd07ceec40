"""What TensorBoard's attention heatmaps add to a validation's pause.

    python -m scripts.benchmarks.bench_heatmaps --steps 150 --repeats 3

Builds a 3-layer, 4-head Transformer on the toy task as `python -m nmt.train`
does (nmt.training.build.build_trainer), trains it for --steps updates so
that its outputs have their real lengths, then times, --repeats times each:

    validate_s    the validation itself (loss, greedy translation, BLEU/chrF)
    blocking_s    Reporter.validation with trainer.heatmap_sentences cards:
                  what the training thread waits for (metrics line, scalars,
                  heatmaps drawn or handed to the drawing thread)
    drained_s     until every card of that validation is written

and prints the median of each, the cards written, and the pause ratio
(validate_s + blocking_s) / validate_s: how many times longer a validation
stops training with heatmaps than without.
"""

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]
TINY = [
    f"model.{part}.{key}={value}"
    for part in ("encoder", "decoder")
    for key, value in (("d_model", 64), ("layers", 3), ("heads", 4), ("ff_size", 128), ("dropout", 0.0))
]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=150, help="training updates before the timing")
    parser.add_argument("--repeats", type=int, default=3, help="timed validations (the median is printed)")
    parser.add_argument("--sentences", type=int, default=3, help="trainer.heatmap_sentences")
    parser.add_argument("--cache-dir", default=None, help="sentencepiece cache (default: a temporary folder)")
    parser.add_argument("--out", default=None, help="also write the figures as JSON to this file")
    return parser.parse_args(argv)


def config(sentences: int, cache_dir: str):
    overrides = [
        "data=toy",
        "model/encoder=transformer",
        "model/decoder=transformer",
        "model/bridge=zero",
        "model/positional=sinusoidal",
        "model/attention=scaled_dot",
        *TINY,
        "optimizer.lr=0.002",
        "trainer.val_max_sentences=50",
        "trainer.device=cpu",
        f"trainer.heatmap_sentences={sentences}",
        f"cache_dir={cache_dir}",
    ]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def count_cards(run_dir: Path) -> int:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"images": 0})
    events.Reload()
    return sum(len(events.Images(tag)) for tag in events.Tags()["images"])


def measure(args, work: Path) -> dict:
    from nmt.training.build import build_trainer
    from nmt.training.config_checks import check_config

    cfg = config(args.sentences, args.cache_dir or str(work / "cache"))
    check_config(cfg)
    trainer = build_trainer(cfg, work / "run")
    trainer.model.train()
    epoch = 0
    while trainer.progress.step < args.steps:
        for batch in trainer.data.train.batches(epoch)[: args.steps - trainer.progress.step]:
            trainer.train_update([batch])
            trainer.progress.step += 1
        epoch += 1
    reporter, validation = trainer.reporter, trainer.validation
    reporter.open(0)
    times = {"validate_s": [], "blocking_s": [], "drained_s": []}
    for step in range(1, args.repeats + 1):
        started = time.perf_counter()
        result = validation.score(trainer.model, trainer.translator, trainer.device)
        times["validate_s"].append(time.perf_counter() - started)
        record = {
            "step": step,
            "loss": result.loss,
            "perplexity": result.perplexity,
            "bleu": result.bleu,
            "chrf": result.chrf,
        }
        started = time.perf_counter()
        reporter.validation(record, trainer.translator, validation.heatmap_pairs)
        times["blocking_s"].append(time.perf_counter() - started)
        drawer = getattr(reporter, "drawer", None)  # the drawing thread, where the Reporter has one:
        if drawer is not None:  # the next validation finds it idle, as after
            drawer.wait()  # training between two validations
        times["drained_s"].append(time.perf_counter() - started)
    reporter.close()
    figures = {key: statistics.median(values) for key, values in times.items()}
    figures["pause_ratio"] = (figures["validate_s"] + figures["blocking_s"]) / figures["validate_s"]
    figures["cards_per_validation"] = count_cards(work / "run") // args.repeats
    figures["bleu"] = result.bleu
    return figures


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out = ready_file(args.out, "bench_heatmaps") if args.out else None
    torch.manual_seed(1)
    with tempfile.TemporaryDirectory() as work:
        figures = measure(args, Path(work))
    figures["command"] = "python -m scripts.benchmarks.bench_heatmaps " + shlex.join(argv if argv is not None else sys.argv[1:])
    figures["threads"] = torch.get_num_threads()
    print(
        f"validation {figures['validate_s']:.2f} s | heatmaps on the training thread "
        f"{figures['blocking_s']:.2f} s, until written {figures['drained_s']:.2f} s | "
        f"{figures['cards_per_validation']} cards | pause with heatmaps / without: {figures['pause_ratio']:.2f}x"
    )
    print(f"command: {figures['command']}")
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1) + "\n")
    return figures


if __name__ == "__main__":
    main()
