"""One command that proves nmt's GPU paths and measures what a GPU user gets.

    python -m scripts.benchmarks.gpu_check --out benchmarks/gpu               # on a GPU machine, under 8 minutes
    python -m scripts.benchmarks.gpu_check --tiny --out /tmp/gpu_check        # the same stages on the CPU, toy-sized

Stages, in order, each written to OUT/gpu_check.json as soon as it ends (a
stage that fails is recorded with its error and the next one runs):
  1. environment: card, driver, CUDA, torch build, the commit;
  2. tests: `pytest -m cuda tests/gpu` (fp16 with its loss scaler, bf16,
     compile on CUDA, one-rank nccl DDP, GPU <-> CPU resume, search and the
     KV cache on the device, pinned batches);
  3. train_speed: target tokens a second, model FLOP/s and peak GPU memory
     of transformer_small (4,096-token batches) in fp32 and bf16, eager and
     with the whole update replayed from CUDA graphs (trainer.cuda_graphs=true
     and data.pad_to_multiple=8; in bf16 also compiled), of rnn_bahdanau in
     fp32, eager and with graphs, and of transformer_base in bf16 at
     65,536-token batches, eager and with graphs; the rows that record
     torch.compile's graphs (trainer.compile_mode=reduce-overhead, 1-3 minutes
     of compiling each) run when --rows names them; each row times its whole
     second epoch (the first compiles and records);
  4. time_to_quality: `python -m nmt.train experiment=transformer_small` with
     --quality-overrides (default on a GPU: bf16, trainer.cuda_graphs and
     16,384-token batches, the fastest measured on an H200:
     benchmarks/gpu/README.md) on Multi30k de->en until validation BLEU
     reaches --target-bleu (or --quality-minutes pass), then test BLEU of its
     best.pt;
  5. decode_speed: that best.pt, greedy and beam 5, batch 1 and a large batch.
OUT/gpu_check.md is a short summary for benchmarks/.

Multi30k comes from --data: by default `data/multi30k` inside the checkout
(git-ignored; copy train/val/test_2016_flickr .de/.en there so the checkout
alone suffices), else `../shared/data/multi30k` beside it.
"""

import argparse
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nmt.base.provenance import git_commit
from scripts.out_path import ready_folder

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("environment", "tests", "train_speed", "time_to_quality", "decode_speed")
# the fastest measured route to validation BLEU 35 on an H200: 28 s (benchmarks/gpu/README.md, session 15)
GPU_QUALITY = (
    "trainer.precision=bf16 trainer.cuda_graphs=true data.pad_to_multiple=8 data.batch_tokens=16384 "
    "optimizer.lr=0.002 schedule.warmup_steps=200 trainer.val_every=240"
)
CPU_QUALITY = "trainer.precision=fp32"
NEEDED = [f"{split}.{lang}" for split in ("train", "val", "test_2016_flickr") for lang in ("de", "en")]


def parse_args(argv=None) -> argparse.Namespace:
    from nmt.base.cli_checks import finite_float

    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "gpu"), help="folder for the JSON and summary")
    parser.add_argument("--data", default=None, help="Multi30k folder (default: data/multi30k, else ../shared)")
    parser.add_argument("--tiny", action="store_true", help="toy task and tiny budgets: the CPU test of this script")
    parser.add_argument("--device", default="auto", help="auto, cuda or cpu")
    parser.add_argument("--stages", default=",".join(STAGES), help="comma-separated stages to run")
    parser.add_argument("--target-bleu", type=finite_float, default=35.0, help="time_to_quality's validation target")
    parser.add_argument("--quality-minutes", type=finite_float, default=5.0, help="time_to_quality's wall-clock cap")
    parser.add_argument(
        "--rows",
        default=None,
        help="comma-separated train_speed rows to run (default: all but 'transformer_base bf16 graphs')",
    )
    parser.add_argument(
        "--quality-overrides",
        default=None,
        help="time_to_quality's overrides beside the preset's, space-separated (default: "
        f"on a GPU '{GPU_QUALITY}', under --tiny or on a CPU '{CPU_QUALITY}')",
    )
    parser.add_argument("--commit", default=None, help="the commit checked (default: git rev-parse HEAD)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.stages.split(",")) - set(STAGES))
    if unknown:
        parser.error(f"--stages: unknown {', '.join(unknown)}; choose from {','.join(STAGES)}")
    names = [name for name, _ in train_rows(args, Path("data"))]
    unknown_rows = [name for name in (args.rows.split(",") if args.rows else []) if name not in names]
    if unknown_rows:
        parser.error(f"--rows: unknown {', '.join(unknown_rows)}; choose from {','.join(names)}")
    return args


def find_data(folder: str | None) -> Path:
    candidates = (
        [Path(folder)] if folder else [ROOT / "data" / "multi30k", ROOT.parent / "shared" / "data" / "multi30k"]
    )
    for path in candidates:
        missing = [n for n in NEEDED if not (path / n).is_file() and not (path / f"{n}.gz").is_file()]
        if not missing:
            return path
    sys.exit(
        f"gpu_check: Multi30k not found: {candidates[0]} lacks {', '.join(missing)}[.gz]; copy them "
        f"there or pass --data"
    )


def environment(args, device) -> dict:
    import torch

    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": str(device),
        "commit": args.commit or git_commit(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu_cores": os.cpu_count(),
    }
    if device.type == "cuda":
        info["card"] = torch.cuda.get_device_name(device)
        info["memory_gib"] = round(torch.cuda.get_device_properties(device).total_memory / 2**30, 1)
        info["cudnn"] = torch.backends.cudnn.version()
        info["bf16_supported"] = torch.cuda.is_bf16_supported()
        try:
            smi = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            info["driver"] = smi.stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            info["driver"] = "unknown"
        from scripts.benchmarks.gpu_flops import matmul_ceiling

        info["bf16_matmul_tflops"] = matmul_ceiling(device)  # an 8192^3 product on random data
    return info


def run_tests(args, device) -> dict:
    workers = "4" if device.type == "cuda" else "0"  # small tests share one GPU well
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-m",
        "cuda",
        "-n",
        workers,
        "-p",
        "no:cacheprovider",
        "-rfEs",
        "tests/gpu",
    ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    tail = done.stdout.strip().splitlines()[-25:]
    return {
        "command": shlex.join(command[1:]),
        "exit": done.returncode,
        "seconds": round(time.perf_counter() - started, 1),
        "summary": next((line.strip("= ") for line in reversed(tail) if " in " in line), ""),
        "tail": tail,
        "passed": done.returncode == 0,
    }


GRAPHS = ["trainer.compile=true", "trainer.compile_mode=reduce-overhead", "data.pad_to_multiple=8"]
CUDA_GRAPHS = ["trainer.cuda_graphs=true", "data.pad_to_multiple=8"]  # the whole update in one graph
OPT_IN_ROWS = (
    "transformer_small fp32 graphs",
    "transformer_small bf16 graphs",
    "transformer_base bf16 graphs",
)  # run only when --rows names them (each compiles 1-3 minutes)


def train_rows(args, data: Path | None) -> list[tuple[str, list[str]]]:
    """(name, overrides) of every train_speed row; --tiny: the toy task's."""
    if args.tiny:
        return [(f"quickstart {p}", ["experiment=quickstart", f"trainer.precision={p}"]) for p in ("fp32", "bf16")]
    small = ["experiment=transformer_small", f"data.path={data}"]
    base = ["experiment=transformer_base", f"data.path={data}", "trainer.precision=bf16"]
    return [
        ("transformer_small fp32 eager", [*small, "trainer.precision=fp32"]),
        ("transformer_small bf16 eager", [*small, "trainer.precision=bf16"]),
        ("transformer_small fp32 graphs", [*small, "trainer.precision=fp32", *GRAPHS]),
        ("transformer_small bf16 graphs", [*small, "trainer.precision=bf16", *GRAPHS]),
        ("transformer_small fp32 cuda_graphs", [*small, "trainer.precision=fp32", *CUDA_GRAPHS]),
        ("transformer_small bf16 cuda_graphs", [*small, "trainer.precision=bf16", *CUDA_GRAPHS]),
        (
            "transformer_small bf16 cuda_graphs compiled",
            [*small, "trainer.precision=bf16", *CUDA_GRAPHS, "trainer.compile=true"],
        ),
        ("rnn_bahdanau fp32 eager", ["experiment=rnn_bahdanau", f"data.path={data}", "trainer.precision=fp32"]),
        (
            "rnn_bahdanau fp32 cuda_graphs",
            ["experiment=rnn_bahdanau", f"data.path={data}", "trainer.precision=fp32", *CUDA_GRAPHS],
        ),
        ("transformer_base bf16 eager", base),
        ("transformer_base bf16 graphs", [*base, *GRAPHS]),
        ("transformer_base bf16 cuda_graphs", [*base, *CUDA_GRAPHS]),
    ]


def compose_row(overrides: list[str], device, cache: Path):
    """The checked config of one row, as `nmt.train` would run it."""
    from hydra import compose, initialize_config_dir

    from nmt.base.config_files import CONFIGS
    from nmt.training.config_checks import check_config

    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[*overrides, f"trainer.device={device}", f"cache_dir={cache}", "trainer.heatmap_sentences=0"],
        )
    check_config(cfg)
    return cfg


def timed_updates(trainer, batches, device) -> tuple[float, int]:
    """(seconds, target tokens) of one update a batch."""
    import torch

    started, tokens = time.perf_counter(), 0
    for batch in batches:
        tokens += trainer.train_update([batch])["tgt_tokens"]
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - started, tokens


def measure_training(overrides: list[str], device, cache: Path, limit: int | None) -> dict:
    """Epoch 0 compiles and records (timed apart), epoch 1 is the figure; model FLOPs
    are counted on three of epoch 1's batches and scaled by its padded positions."""
    import torch

    from nmt.training.build import build_trainer
    from scripts.benchmarks.gpu_flops import epoch_flops

    cfg = compose_row(overrides, device, cache)
    run_folder = tempfile.TemporaryDirectory(prefix="gpu_check_train_")  # the Trainer's; removed with the trainer
    trainer = build_trainer(cfg, Path(run_folder.name))
    trainer.model.train()
    first_seconds, _ = timed_updates(trainer, trainer.data.train.batches(0)[:limit], device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    batches = trainer.data.train.batches(1)[:limit]
    seconds, tokens = timed_updates(trainer, batches, device)
    updates = len(batches)
    flops = epoch_flops(trainer, batches)
    row = {
        "precision": trainer.precision,
        "batch_tokens": int(cfg.data.batch_tokens),
        "compile_mode": str(cfg.trainer.compile_mode) if cfg.trainer.compile else "eager",
        "cuda_graphs": len(trainer.graphed.graphs) if trainer.graphed else 0,  # recorded, both epochs
        "pad_to_multiple": int(cfg.data.pad_to_multiple),
        "updates": updates,
        "first_epoch_seconds": round(first_seconds, 2),
        "seconds": round(seconds, 3),
        "tgt_tokens_per_s": round(tokens / seconds, 1),
        "updates_per_s": round(updates / seconds, 2),
        "model_tflops_per_s": round(flops / seconds / 1e12, 4),
    }
    if device.type == "cuda":
        row["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    del trainer
    run_folder.cleanup()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return row


def train_speed(args, data, device, cache, results: list, on_row) -> list[dict]:
    """Each row is appended to `results` (and saved) as it ends, so a check cut off keeps the rows done."""
    chosen = args.rows.split(",") if args.rows else None
    for name, overrides in train_rows(args, data):
        if (chosen and name not in chosen) or (not chosen and name in OPT_IN_ROWS):
            continue
        try:
            row = measure_training(overrides, device, cache, 4 if args.tiny else None)
        except Exception as error:  # one row's failure is a finding, not the end of the check
            row = {"error": f"{type(error).__name__}: {error}"[:500]}
        results.append({"name": name, "overrides": overrides, **row})
        print(f"  {name}: {row}", flush=True)
        on_row()
    return results


def quality_overrides(args, device) -> list[str]:
    """--quality-overrides, else the GPU's fastest measured recipe on a GPU and fp32 elsewhere."""
    if args.quality_overrides is not None:
        return args.quality_overrides.split()
    return (GPU_QUALITY if device.type == "cuda" and not args.tiny else CPU_QUALITY).split()


def time_to_quality(args, data, device, cache, run_dir: Path) -> dict:
    """Train the real command line, stop it with SIGINT at the target, score best.pt on test."""
    overrides = (
        ["experiment=quickstart", "trainer.val_every=25"]
        if args.tiny
        else ["experiment=transformer_small", f"data.path={data}", "trainer.val_every=250"]
    )
    overrides += ["trainer.max_steps=100000", *quality_overrides(args, device)]  # after: they may change the above
    command = [
        sys.executable,
        "-m",
        "nmt.train",
        *overrides,
        f"trainer.device={device}",
        f"trainer.max_minutes={args.quality_minutes}",
        "trainer.heatmap_sentences=0",
        f"cache_dir={cache}",
        f"hydra.run.dir={run_dir}",
    ]
    env = dict(os.environ, PYTHONUNBUFFERED="1", TQDM_DISABLE="1")
    started = time.perf_counter()
    reached = None
    with open(run_dir.parent / "time_to_quality.log", "w") as log:
        process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
        metrics = run_dir / "metrics.jsonl"
        while process.poll() is None:
            time.sleep(1.0)
            records = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
            hit = next((r for r in records if r.get("bleu", 0) >= args.target_bleu), None)
            if hit and reached is None:
                reached = {"step": hit["step"], "seconds": round(time.perf_counter() - started, 1), "bleu": hit["bleu"]}
                process.send_signal(signal.SIGINT)  # nmt stops cleanly; best.pt is already written
        code = process.wait(timeout=120)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    result = {
        "command": shlex.join(command[1:]),
        "exit": code,
        "seconds": round(time.perf_counter() - started, 1),
        "target_bleu": args.target_bleu,
        "reached": reached,
        "curve": [{"step": r["step"], "bleu": round(r["bleu"], 2)} for r in records if "bleu" in r],
    }
    best = run_dir / "checkpoints" / "best.pt"
    if best.exists():
        from nmt.base.scoring import score_translations
        from nmt.translator import Translator

        sources, references = test_pairs(args, data)
        translator = Translator.from_checkpoint(best, device=str(device))
        hypotheses = [t.text for t in translator.translate(sources, beam_size=1, batch_size=128)]
        result["test_bleu_greedy"] = round(score_translations(hypotheses, references)[0], 2)
        result["best"] = str(best)
    return result


def test_pairs(args, data) -> tuple[list[str], list[str]]:
    if args.tiny:
        from nmt.data.toy import make_toy_corpus

        pairs = make_toy_corpus(60, 60, 60, seed=1234).test
        return [s for s, _ in pairs], [t for _, t in pairs]
    from nmt.data.readers import read_parallel

    pairs = read_parallel(find_file(data, "test_2016_flickr.de"), find_file(data, "test_2016_flickr.en"))
    return [s for s, _ in pairs], [t for _, t in pairs]


def find_file(folder: Path, name: str) -> Path:
    return folder / name if (folder / name).is_file() else folder / f"{name}.gz"


def decode_speed(args, data, device, checkpoint: Path) -> list[dict]:
    import torch

    from nmt.base.scoring import score_translations
    from nmt.translator import Translator

    sources, references = test_pairs(args, data)
    translator = Translator.from_checkpoint(checkpoint, device=str(device))
    rows = []
    for beam in (1, 5):
        for batch_size, limit in ((1, 20 if args.tiny else 200), (len(sources), len(sources))):
            translator.translate(sources[:8], beam_size=beam, batch_size=min(batch_size, 8))  # warm-up
            if device.type == "cuda":
                torch.cuda.synchronize()
            started = time.perf_counter()
            outputs = translator.translate(sources[:limit], beam_size=beam, batch_size=batch_size)
            if device.type == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - started
            tokens = sum(len(o.tokens) + 1 for o in outputs)
            row = {
                "beam": beam,
                "batch_size": batch_size,
                "sentences": limit,
                "seconds": round(seconds, 2),
                "sentences_per_s": round(limit / seconds, 1),
                "tokens_per_s": round(tokens / seconds, 1),
                "bleu": round(score_translations([o.text for o in outputs], references[:limit])[0], 2),
            }
            rows.append(row)
            print(f"  decode {row}", flush=True)
    return rows


def summary_markdown(report: dict) -> str:
    env = report.get("environment", {})
    lines = [
        f"# GPU check, {env.get('date', '')}",
        "",
        f"Card {env.get('card', env.get('device'))}, driver {env.get('driver', '-')}, CUDA {env.get('cuda')}, "
        f"torch {env.get('torch')}, Python {env.get('python')}, commit `{env.get('commit')}`.",
        "",
        f"Command: `{report['command']}`",
        "",
    ]
    tests = report.get("tests", {})
    if tests:
        lines += [f"Tests (`{tests.get('command', '')}`): {tests.get('summary', tests.get('error', ''))}", ""]
    if report.get("train_speed"):
        ceiling = env.get("bf16_matmul_tflops")
        lines += [
            "Each row: its second epoch, one update a batch; the first epoch (compiling and recording "
            "CUDA graphs) apart. Model TFLOP/s: torch.utils.flop_counter's count of forward and backward"
            + (f"; share: of the {ceiling} TFLOP/s a bf16 8192³ product reached on this card." if ceiling else "."),
            "",
            "| training | batch tokens | graphs | updates | first epoch s | target tokens/s | updates/s | "
            "model TFLOP/s | share | peak GPU GiB |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in report["train_speed"]:
            share = f"{100 * r['model_tflops_per_s'] / ceiling:.1f}%" if ceiling and "model_tflops_per_s" in r else "-"
            lines.append(
                f"| {r['name']} | {r.get('batch_tokens', '-')} | {r.get('cuda_graphs', '-')} | "
                f"{r.get('updates', '-')} | "
                f"{r.get('first_epoch_seconds', '-')} | {r.get('tgt_tokens_per_s', r.get('error', '-'))} | "
                f"{r.get('updates_per_s', '-')} | {r.get('model_tflops_per_s', '-')} | {share} | "
                f"{r.get('peak_memory_gib', '-')} |"
            )
        lines.append("")
    quality = report.get("time_to_quality", {})
    if quality:
        reached = quality.get("reached")
        lines += [
            f"Time to quality (`{quality.get('command', '')}`): "
            + (
                f"validation BLEU {reached['bleu']:.2f} ≥ {quality['target_bleu']} at update {reached['step']}, "
                f"{reached['seconds']} s after the command started"
                if reached
                else f"target {quality.get('target_bleu')} not reached in {quality.get('seconds')} s"
            )
            + f"; test BLEU of best.pt (greedy): {quality.get('test_bleu_greedy', '-')}.",
            "",
        ]
    if report.get("decode_speed"):
        lines += ["| decoding | batch | sentences | sentences/s | tokens/s | BLEU |", "|---|---|---|---|---|---|"]
        for r in report["decode_speed"]:
            search = "greedy" if r["beam"] == 1 else f"beam {r['beam']}"
            lines.append(
                f"| {search} | {r['batch_size']} | {r['sentences']} | {r['sentences_per_s']} | "
                f"{r['tokens_per_s']} | {r['bleu']} |"
            )
        lines.append("")
    failed = [name for name, value in report.items() if isinstance(value, dict) and "error" in value]
    lines.append(
        f"Stages that failed: {', '.join(failed) if failed else 'none'}; wall clock {report.get('seconds')} s in all."
    )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    data = None if args.tiny else find_data(args.data)
    import torch

    from nmt.base.device import resolve_device

    device = resolve_device(args.device)
    out = ready_folder(args.out, "gpu_check")
    work_folder = tempfile.TemporaryDirectory(prefix="gpu_check_")  # cache and quality run; removed at the end
    work = Path(work_folder.name)
    cache = work / "cache"
    stages = args.stages.split(",")
    report = {"command": "python -m scripts.benchmarks.gpu_check " + shlex.join(sys.argv[1:] if argv is None else argv)}
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 rows are fp32, as on the CPU

    def save():
        report["seconds"] = round(time.perf_counter() - started, 1)
        (out / "gpu_check.json").write_text(json.dumps(report, indent=1) + "\n")
        (out / "gpu_check.md").write_text(summary_markdown(report))

    jobs = {
        "environment": lambda: environment(args, device),
        "tests": lambda: run_tests(args, device),
        "train_speed": lambda: train_speed(args, data, device, cache, report.setdefault("train_speed", []), save),
        "time_to_quality": lambda: time_to_quality(args, data, device, cache, work / "quality_run"),
        "decode_speed": lambda: decode_speed(args, data, device, Path(report["time_to_quality"]["best"])),
    }
    for stage in stages:
        print(f"gpu_check: {stage} ...", flush=True)
        stage_started = time.perf_counter()
        try:
            report[stage] = jobs[stage]()
        except Exception as error:  # recorded; the remaining stages still run
            report[stage] = {"error": f"{type(error).__name__}: {error}"[:1000]}
        print(f"gpu_check: {stage} done in {time.perf_counter() - stage_started:.0f} s", flush=True)
        save()
    if (work / "time_to_quality.log").exists():  # the quality run's log outlives its folder
        log = (work / "time_to_quality.log").read_text(encoding="utf-8", errors="replace")
        (out / "time_to_quality.log").write_text(
            f"{log}(gpu_check: the run's folder, {work / 'quality_run'}, was scratch space, removed at the end)\n",
            encoding="utf-8",
        )
    work_folder.cleanup()
    print(summary_markdown(report))
    failed = [
        s
        for s in stages
        if isinstance(report.get(s), dict) and ("error" in report[s] or report[s].get("passed") is False)
    ]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
