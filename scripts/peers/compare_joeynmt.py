"""Training speed of nmt against JoeyNMT 2.3.0 on the same data, vocabulary and batch size.

    python -m scripts.peers.compare_joeynmt --data ../shared/data/multi30k --steps 30 --warmup 5 --rounds 2 \
        [--variant trainer.precision=bf16]

Installs JoeyNMT 2.3.0 in its own virtual environment (--venv, default
.bench/joeynmt-venv, git-ignored) beside torch==2.13.0, then for each preset
(transformer_small, rnn_bahdanau) writes an equivalent JoeyNMT config:

    same corpus (Multi30k de->en; plain-text copies in --work, outside the repo),
    the very sentencepiece model nmt trains (joint 8k unigram), so both sides
    see identical subwords and an 8000-entry vocabulary,
    4096-token batches (JoeyNMT batch_type token: batch size * longest row),
    the same layers, sizes, dropout, label smoothing, Adam and gradient clipping.

Each round trains every preset on both sides in turn (ours, theirs, ours,
theirs, ...), W warm-up updates and N timed ones, so the ratios come from the
same minutes of a shared machine. Our tokens/s comes from
scripts/benchmarks/bench_train.py; JoeyNMT's from its own per-step log (logging_freq 1):
each "Tokens per Sec" weighted by the step's time between log lines. Both
count real target tokens (the labels, eos included).
"""

import argparse
import gzip
import json
import os
import re
import shlex
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"  # the shared data beside the checkout (README)
PRESETS = ("transformer_small", "rnn_bahdanau")
SPLITS = {"train": "train", "dev": "val", "test": "test_2016_flickr"}


def shared_arguments(parser: argparse.ArgumentParser, out_name: str) -> None:
    """The options of both JoeyNMT comparisons (training and decoding)."""
    parser.add_argument("--data", default=str(MULTI30K), help="Multi30k folder (data.path)")
    parser.add_argument("--rounds", type=int, default=1, help="alternations of the two sides")
    parser.add_argument("--venv", default=str(ROOT / ".bench" / "joeynmt-venv"))
    parser.add_argument("--work", default="/tmp/nmt-joeynmt", help="JoeyNMT data, configs and models")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / out_name))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    shared_arguments(parser, "compare_joeynmt.json")
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument("--steps", type=int, default=30, help="timed updates per run")
    parser.add_argument("--warmup", type=int, default=5, help="untimed updates first")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="OVERRIDES",
        help="also time nmt with these Hydra overrides (space-separated), as one more "
        "side of every round, e.g. --variant trainer.precision=bf16",
    )
    return parser.parse_args(argv)


def run(command: list[str], env=None, cwd=None) -> subprocess.CompletedProcess:
    result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    if result.returncode:
        sys.exit(
            f"failed ({result.returncode}): {shlex.join(command)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    return result


def ensure_venv(venv: Path) -> Path:
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import joeynmt, importlib.metadata as m; print(m.version('joeynmt'))"]
    if python.exists() and subprocess.run(check, capture_output=True, text=True).stdout.strip() == "2.3.0":
        return python
    print(f"installing JoeyNMT 2.3.0 into {venv}", flush=True)
    run([sys.executable, "-m", "venv", str(venv)])
    run([str(python), "-m", "pip", "install", "-q", "torch==2.13.0"])
    run([str(python), "-m", "pip", "install", "-q", "joeynmt==2.3.0", "importlib_metadata", "sentencepiece==0.2.0"])
    return python


def read_text(folder: Path, stem: str) -> str:
    for name in (stem, stem + ".gz"):
        path = folder / name
        if path.is_file():
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as handle:
                return handle.read()
    sys.exit(f"{folder}/{stem}[.gz] not found; pass --data with Multi30k's train, val, test_2016_flickr")


def prepare_data(data: Path, work: Path) -> tuple[Path, Path]:
    """Plain-text copies for JoeyNMT, and nmt's own sentencepiece model and its vocabulary."""
    from nmt.data.corpora import config_dict, load_corpus
    from nmt.data.tokenizer import Tokenizer
    from scripts.benchmarks.bench_train import compose_config

    folder = work / "data"
    folder.mkdir(parents=True, exist_ok=True)
    for split in SPLITS.values():
        for lang in ("de", "en"):
            target = folder / f"{split}.{lang}"
            if not target.is_file():
                target.write_text(read_text(data, f"{split}.{lang}"), encoding="utf-8")
    cfg = compose_config("transformer_small", [f"data.path={data}"])
    corpus = load_corpus(config_dict(cfg.data), "data")
    train = [(s, t) for s, t in corpus.train if s.strip() and t.strip()]
    tokenizer = Tokenizer.train(
        train, int(cfg.data.vocab_size), str(cfg.data.spm_model_type), bool(cfg.data.joint_vocab), ROOT / "data"
    )
    spm_path = work / "spm.model"
    spm_path.write_bytes(tokenizer.to_bytes()["src"])
    # JoeyNMT puts <unk> <pad> <s> </s> first itself; the other 7996 pieces follow in nmt's order.
    pieces = tokenizer.src_pieces(range(4, tokenizer.src_vocab_size))
    vocab_path = work / "vocab.txt"
    vocab_path.write_text("".join(p + "\n" for p in pieces), encoding="utf-8")
    return spm_path, vocab_path


def joey_config(
    preset: str,
    work: Path,
    spm_path: Path,
    vocab_path: Path,
    updates: int,
    validation_freq: int = 10**9,
    same_schedule: bool = False,
    dev: Path | None = None,
) -> dict:
    """The JoeyNMT 2.3.0 config equivalent to configs/experiment/PRESET.yaml.

    validation_freq: updates between validations (default: never, for the speed runs).
    same_schedule: the preset's learning-rate schedule too (inverse_sqrt becomes JoeyNMT's
    warmupinversesquareroot, the same formula); default a constant rate.
    dev: the validation files' prefix (default WORK/data/val).
    """
    from scripts.benchmarks.bench_train import compose_config

    cfg = compose_config(preset, [])
    side = {
        "level": "bpe",
        "lowercase": False,
        "max_length": int(cfg.data.max_len),
        "voc_file": str(vocab_path),
        "tokenizer_type": "sentencepiece",
        "tokenizer_cfg": {"model_file": str(spm_path)},
    }
    enc, dec = cfg.model.encoder, cfg.model.decoder
    if preset == "transformer_small":
        layer = lambda c: {
            "type": "transformer",
            "num_layers": int(c.layers),
            "num_heads": int(c.heads),
            "hidden_size": int(c.d_model),
            "ff_size": int(c.ff_size),
            "dropout": float(c.dropout),
            "embeddings": {"embedding_dim": int(c.d_model), "scale": True, "dropout": float(c.dropout)},
        }
        model = {
            "initializer": "xavier_uniform",
            "embed_initializer": "xavier_uniform",
            "bias_initializer": "zeros",
            "tied_embeddings": True,
            "tied_softmax": True,
            "encoder": layer(enc),
            "decoder": layer(dec),
        }
    elif preset == "rnn_bahdanau":
        model = {
            "tied_embeddings": True,
            "tied_softmax": False,
            "encoder": {
                "type": "recurrent",
                "rnn_type": "gru",
                # JoeyNMT's hidden_size is per direction; ours is the state size
                "hidden_size": int(enc.hidden_size) // (2 if enc.bidirectional else 1),
                "num_layers": int(enc.layers),
                "bidirectional": bool(enc.bidirectional),
                "dropout": float(enc.dropout),
                "embeddings": {"embedding_dim": int(enc.embed_dim), "dropout": float(enc.dropout)},
            },
            "decoder": {
                "type": "recurrent",
                "rnn_type": "gru",
                "hidden_size": int(dec.hidden_size),
                "num_layers": int(dec.layers),
                "attention": "bahdanau",
                "input_feeding": True,
                "init_hidden": "bridge",
                "dropout": float(dec.dropout),
                "embeddings": {"embedding_dim": int(dec.embed_dim), "dropout": float(dec.dropout)},
            },
        }
    else:
        sys.exit(f"--presets: {preset!r} has no JoeyNMT equivalent here; choose from {PRESETS}")
    return {
        "name": f"joey_{preset}",
        "joeynmt_version": "2.3.0",
        "model_dir": str(work / f"model_{preset}"),
        "use_cuda": False,
        "fp16": False,
        "random_seed": int(cfg.trainer.seed),
        "data": {
            "train": str(work / "data" / "train"),
            "dev": str(dev or work / "data" / "val"),
            "test": str(work / "data" / "test_2016_flickr"),
            "dataset_type": "plain",
            "src": {"lang": cfg.data.src_lang, **side},
            "trg": {"lang": cfg.data.tgt_lang, **side},
            "special_symbols": {
                "unk_token": "<unk>",
                "unk_id": 0,
                "pad_token": "<pad>",
                "pad_id": 1,
                "bos_token": "<s>",
                "bos_id": 2,
                "eos_token": "</s>",
                "eos_id": 3,
            },
        },
        "training": {
            "optimizer": "adam",
            "adam_betas": [float(b) for b in cfg.optimizer.betas],
            "learning_rate": float(cfg.optimizer.lr),
            **joey_schedule(cfg, same_schedule),
            "batch_size": int(cfg.data.batch_tokens),
            "batch_type": "token",
            "normalization": "tokens",
            "label_smoothing": float(cfg.trainer.label_smoothing),
            "clip_grad_norm": float(cfg.trainer.grad_clip),
            "updates": updates,
            "epochs": 100,
            "validation_freq": validation_freq,
            "logging_freq": 1,
            "shuffle": True,
            "overwrite": True,
            "eval_metrics": ["bleu"],
            "early_stopping_metric": "bleu",
            "keep_best_ckpts": 1,
            "num_workers": 0,
        },
        "testing": {
            "beam_size": 5,
            "beam_alpha": 1.0,
            "batch_size": 64,
            "batch_type": "sentence",
            "max_output_length": 100,
            "eval_metrics": ["bleu"],
            "sacrebleu_cfg": {"tokenize": "13a"},
        },
        "model": model,
    }


def joey_schedule(cfg, same_schedule: bool) -> dict:
    """JoeyNMT's `training` keys for the learning rate: constant, or the preset's own schedule."""
    # the plateau scheduler breaks on torch 2.13: a constant rate is exponential with factor 1
    constant = {"scheduling": "exponential", "decrease_factor": 1.0, "learning_rate_min": 1.0e-8}
    kind = str(cfg.schedule._target_).rsplit(".", 1)[-1]
    if not same_schedule or kind == "ConstantSchedule":
        return constant
    if kind == "InverseSqrtSchedule":
        # lr0 * min(step / warmup, sqrt(warmup / step)), as nmt.training.schedules.InverseSqrtSchedule
        return {
            "scheduling": "warmupinversesquareroot",
            "learning_rate_warmup": int(cfg.schedule.warmup_steps),
            "learning_rate_min": 1.0e-8,
        }
    sys.exit(f"schedule {kind} has no JoeyNMT equivalent here; use a constant or inverse_sqrt preset")


STEP_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*Step:\s+(\d+),.*Tokens per Sec:\s+(\d+)")
PARAMS_LINE = re.compile(r"Total params:\s*([\d,]+)")


def joey_speed(log: str, warmup: int, steps: int) -> tuple[float, float, int | None]:
    """Target tokens/s and seconds over steps warmup+1 .. warmup+steps, from JoeyNMT's log."""
    stamps, rates = {}, {}
    for line in log.splitlines():
        match = STEP_LINE.search(line)
        if match:
            stamps[int(match[2])] = datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            rates[int(match[2])] = float(match[3])
    if warmup + steps not in stamps or warmup not in stamps:
        sys.exit(f"JoeyNMT's log has no step {warmup + steps} (or {warmup}); is logging_freq 1?\n{log[-2000:]}")
    tokens = seconds = 0.0
    for step in range(warmup + 1, warmup + steps + 1):
        dt = stamps[step] - stamps[step - 1]
        tokens += rates[step] * dt
        seconds += dt
    params = PARAMS_LINE.search(log)
    return tokens / seconds, seconds, int(params[1].replace(",", "")) if params else None


def train_joey(
    python: Path, preset: str, work: Path, spm_path: Path, vocab_path: Path, warmup: int, steps: int
) -> dict:
    import yaml

    config = joey_config(preset, work, spm_path, vocab_path, warmup + steps)
    path = work / f"joey_{preset}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
    command = [str(python), "-m", "joeynmt", "train", str(path), "--skip-test"]
    run(command, env=env, cwd=work)
    log = (Path(config["model_dir"]) / "train.log").read_text()
    speed, seconds, params = joey_speed(log, warmup, steps)
    return {
        "tgt_tokens_per_s": round(speed, 1),
        "seconds": round(seconds, 2),
        "parameters": params,
        "tgt_tokens_per_step": round(speed * seconds / steps, 1),
        "command": shlex.join(command),
        "config": str(path),
        "model_dir": config["model_dir"],
    }


def train_ours(
    preset: str, data: Path, warmup: int, steps: int, tag: str, work: Path, overrides: tuple[str, ...] = ()
) -> dict:
    out = work / "ours"
    command = [
        sys.executable,
        "-m",
        "scripts.benchmarks.bench_train",
        "--preset",
        preset,
        "--steps",
        str(steps),
        "--warmup",
        str(warmup),
        "--flop-batches",
        "0",
        "--ceiling-seconds",
        "0",
        "--profile-steps",
        "0",
        "--out",
        str(out),
        "--tag",
        tag,
    ]
    run(command + [f"data.path={data}", *overrides], cwd=ROOT)
    figures = json.loads((out / f"bench_train_{preset}_{tag}.json").read_text())
    return {
        "tgt_tokens_per_s": figures["tgt_tokens_per_s"],
        "seconds": figures["seconds"],
        "parameters": figures["parameters"],
        "tgt_tokens_per_step": figures["tgt_tokens_per_step"],
        "precision": figures["precision"],
        "command": figures["command"],
    }


def summarise(runs: dict, steps: int) -> dict:
    """Per preset and nmt side ("ours", "ours OVERRIDES"): mean target tokens/s of
    both sides, the mean of the per-round ratios (each round's nmt over the same
    round's JoeyNMT), tokens and seconds per update, parameters."""
    mean = lambda xs: sum(xs) / len(xs)
    table = {}
    for preset, sides in runs.items():
        theirs = sides["joeynmt"]
        table[preset] = {}
        for side, ours in sides.items():
            if side == "joeynmt":
                continue
            ratios = [a["tgt_tokens_per_s"] / b["tgt_tokens_per_s"] for a, b in zip(ours, theirs)]
            table[preset][side] = {
                "ours": mean([r["tgt_tokens_per_s"] for r in ours]),
                "joeynmt": mean([r["tgt_tokens_per_s"] for r in theirs]),
                "ratio": mean(ratios),
                "ratios_per_round": [round(r, 3) for r in ratios],
                "tokens_per_update": [mean([r["tgt_tokens_per_step"] for r in group]) for group in (ours, theirs)],
                "seconds_per_update": [mean([r["seconds"] for r in group]) / steps for group in (ours, theirs)],
                "parameters": [ours[0]["parameters"], theirs[0]["parameters"]],
            }
    return table


def main(argv=None) -> None:
    args = parse_args(argv)
    args.out = ready_file(args.out, "compare_joeynmt")
    command = "python -m scripts.peers.compare_joeynmt " + shlex.join(sys.argv[1:] if argv is None else argv)
    data, work = Path(args.data).resolve(), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    python = ensure_venv(Path(args.venv))
    spm_path, vocab_path = prepare_data(data, work)
    presets = [p for p in args.presets.split(",") if p]
    variants = {" ".join(["ours", *v.split()]): tuple(v.split()) for v in args.variant}  # side -> overrides
    sides = ["ours", *variants, "joeynmt"]
    runs = {p: {side: [] for side in sides} for p in presets}
    for round_ in range(args.rounds):
        for preset in presets:
            for number, side in enumerate(sides):
                if side == "joeynmt":
                    figures = train_joey(python, preset, work, spm_path, vocab_path, args.warmup, args.steps)
                else:
                    figures = train_ours(
                        preset, data, args.warmup, args.steps, f"r{round_}s{number}", work, variants.get(side, ())
                    )
                runs[preset][side].append(figures)
                print(
                    f"round {round_ + 1} {preset:<18} {side:<8} {figures['tgt_tokens_per_s']:>8.1f} "
                    f"target tokens/s ({figures['seconds']:.1f} s for {args.steps} updates of "
                    f"{figures['tgt_tokens_per_step']:.0f} target tokens, "
                    f"{figures['parameters']} parameters)",
                    flush=True,
                )

    print(f"\n{command}\n")
    table = summarise(runs, args.steps)
    print(
        "| preset | nmt | nmt tgt tok/s | JoeyNMT tgt tok/s | ratio | tgt tokens per update (nmt / JoeyNMT) "
        "| s per update (nmt / JoeyNMT) | parameters (nmt / JoeyNMT) |"
    )
    print("| --- | --- | ---: | ---: | ---: | --- | --- | --- |")
    for preset, rows in table.items():
        for side, row in rows.items():
            print(
                f"| {preset} | {side} | {row['ours']:.0f} | {row['joeynmt']:.0f} | {row['ratio']:.2f}x "
                f"(rounds: {', '.join(f'{r:.2f}' for r in row['ratios_per_round'])}) | "
                f"{row['tokens_per_update'][0]:.0f} / {row['tokens_per_update'][1]:.0f} | "
                f"{row['seconds_per_update'][0]:.2f} / {row['seconds_per_update'][1]:.2f} | "
                f"{row['parameters'][0]:,} / {row['parameters'][1] or 0:,} |"
            )
    Path(args.out).write_text(
        json.dumps(
            {
                "command": command,
                "warmup": args.warmup,
                "steps": args.steps,
                "rounds": args.rounds,
                "variants": args.variant,
                "table": table,
                "runs": runs,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"(figures in {args.out})")


if __name__ == "__main__":
    main()
