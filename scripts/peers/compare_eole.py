"""Training speed of nmt against eole 0.6.4 (OpenNMT's successor) on the same data, pieces and batches.

    taskset -c 1 python -m scripts.peers.compare_eole --data ../shared/data/multi30k --rounds 3

Installs eole 0.6.4 in its own virtual environment (--venv, default
.bench/eole-venv, git-ignored) beside torch==2.13.0 and aiohttp (which eole's
command imports without declaring it), then in each round trains
`transformer_small` once with nmt (scripts/benchmarks/bench_train.py) and once with an
eole configuration equal to it parameter for parameter (the counts are
printed, and a mismatch stops the run):

    3+3 pre-norm layers, d 256, 4 heads, ff 1024, biases on the attention
    and feed-forward projections, no generator bias, the target embedding
    tied to the output layer, separate source and target embeddings of the
    same joint 8k sentencepiece model nmt trains (eole reads its pieces as
    text, `transforms: []`), sinusoidal positions, dropout 0.1, label
    smoothing 0.1, Adam (0.9, 0.98) at a constant 0.001, clip 1.0,
    4,096-token batches normalised by tokens, no data workers; fp32 on both
    sides, or with `--precision bf16` nmt's `trainer.precision=bf16` against
    eole's `compute_dtype: bf16`.

Both sides are timed per update, each in its own process, over the same
window (updates W+1 .. W+N): nmt by bench_train, eole by a shim that wraps
`Trainer._train_step` (forward, backward, optimiser step, as bench_train
times) and records each batch's shapes. Reported per side: target tokens a
second (real labels, eos included), padded positions a second (every
position of the source and target tensors, pads included: the work the model
really does) and the padding share; and the ratio nmt / eole of both, per
round, with the median over rounds. Run it on one pinned core, alone.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from nmt import cpu_description, read_cpuinfo
from scripts.out_path import ready_file
from scripts.peers.compare_joeynmt import ROOT, SPLITS, prepare_data, run

EOLE_VERSION = "0.6.4"
PRESET = "transformer_small"
# --precision -> (nmt's trainer.precision, eole's compute_dtype): the same number format on both sides
PRECISIONS = {"fp32": ("fp32", "fp32"), "bf16": ("bf16", "bf16")}

# Runs inside eole's venv: times eole's own training step and records each batch's shapes.
SHIM = r"""
import atexit, json, sys, time
import eole.trainer
from eole.bin.main import main

OUT, PAD = sys.argv.pop(1), None
steps = []
step_of = eole.trainer.Trainer._train_step


def timed_step(self, batches, normalization, *args, **kwargs):
    pad = self.train_loss.padding_idx
    shapes = [(b["src"].numel(), b["tgt"].numel(), int(b["tgt"][:, 1:].ne(pad).sum()),
               int(b["src"].ne(pad).sum()) + int(b["tgt"].ne(pad).sum())) for b in batches]
    start = time.perf_counter()
    result = step_of(self, batches, normalization, *args, **kwargs)
    seconds = time.perf_counter() - start
    steps.append({"seconds": seconds, "positions": sum(s + t for s, t, _, _ in shapes),
                  "tgt_tokens": sum(x[2] for x in shapes), "real_positions": sum(x[3] for x in shapes)})
    return result


eole.trainer.Trainer._train_step = timed_step
atexit.register(lambda: open(OUT, "w").write(json.dumps(steps)))
sys.argv = ["eole", *sys.argv[1:]]
main()
"""


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data", default=str(ROOT.parent / "shared" / "data" / "multi30k"), help="Multi30k folder (data.path)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two sides")
    parser.add_argument("--steps", type=int, default=25, help="timed updates per run")
    parser.add_argument("--warmup", type=int, default=5, help="untimed updates first")
    parser.add_argument("--venv", default=str(ROOT / ".bench" / "eole-venv"))
    parser.add_argument("--work", default="/tmp/nmt-eole", help="eole's data, configs and models")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "compare_eole.json"))
    parser.add_argument(
        "--precision",
        choices=sorted(PRECISIONS),
        default="fp32",
        help="both sides' number format: nmt's trainer.precision and eole's compute_dtype (default fp32)",
    )
    parser.add_argument(
        "--side",
        action="append",
        type=side,
        default=None,
        metavar="LABEL:OVERRIDES",
        help="one nmt run a round, named nmt/LABEL, with these space-separated overrides, e.g. "
        "'openblas:trainer.matmul=openblas data.sort_by=target' (repeat it for more; "
        "default: 'torch:' alone, nmt as configured)",
    )
    args = parser.parse_args(argv)
    args.side = args.side or [side("torch:")]
    labels = [label for label, _ in args.side]
    if len(set(labels)) < len(labels):
        parser.error(f"--side labels must differ (each names one nmt side): {', '.join(labels)}")
    return args


def side(text: str) -> tuple[str, list[str]]:
    """'LABEL:OVERRIDE OVERRIDE ...' -> (LABEL, [OVERRIDE, ...])."""
    label, colon, overrides = text.partition(":")
    if not colon or not label.strip() or not all("=" in o for o in overrides.split()):
        raise argparse.ArgumentTypeError(f"{text!r}: give LABEL:KEY=VALUE KEY=VALUE ...")
    return label.strip(), overrides.split()


def ensure_venv(venv: Path) -> Path:
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import eole, importlib.metadata as m; print(m.version('eole'))"]
    if python.exists() and subprocess.run(check, capture_output=True, text=True).stdout.strip() == EOLE_VERSION:
        return python
    print(f"installing eole {EOLE_VERSION} into {venv} (several minutes)", flush=True)
    run([sys.executable, "-m", "venv", str(venv)])
    run([str(python), "-m", "pip", "install", "-q", "torch==2.13.0"])
    run([str(python), "-m", "pip", "install", "-q", f"eole=={EOLE_VERSION}", "aiohttp"])
    return python


def piece_files(work: Path, spm_path: Path, vocab_path: Path) -> dict[str, Path]:
    """Each split's sides as space-separated pieces of nmt's sentencepiece model (what
    eole reads with `transforms: []`), and eole's vocabulary: the same 7,996 pieces,
    after which eole puts its four specials first (8,000 entries, as nmt's)."""
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(spm_path))
    files = {}
    for split in SPLITS.values():
        for lang in ("de", "en"):
            target = work / "pieces" / f"{split}.{lang}"
            files[f"{split}.{lang}"] = target
            if not target.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                lines = (work / "data" / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()
                target.write_text(
                    "".join(" ".join(sp.encode(line, out_type=str)) + "\n" for line in lines), encoding="utf-8"
                )
    files["vocab"] = work / "eole_vocab.txt"
    files["vocab"].write_text(
        "".join(f"{p}\t1\n" for p in vocab_path.read_text(encoding="utf-8").split("\n") if p), encoding="utf-8"
    )
    return files


def eole_config(work: Path, files: dict[str, Path], updates: int, precision: str = "fp32") -> dict:
    """eole 0.6.4's configuration equal to nmt's transformer_small (module docstring)."""
    from scripts.benchmarks.bench_train import compose_config

    cfg = compose_config(PRESET, [])
    enc, dec = cfg.model.encoder, cfg.model.decoder
    assert (enc.d_model, enc.layers, enc.heads, enc.ff_size) == (dec.d_model, dec.layers, dec.heads, dec.ff_size)
    train, valid = (work / "pieces" / "train", work / "pieces" / "val")
    src, tgt = cfg.data.src_lang, cfg.data.tgt_lang
    return {
        "seed": int(cfg.trainer.seed),
        "overwrite": True,
        "report_every": 1,
        "src_vocab": str(files["vocab"]),
        "tgt_vocab": str(files["vocab"]),
        "share_vocab": True,
        "src_vocab_size": int(cfg.data.vocab_size),
        "tgt_vocab_size": int(cfg.data.vocab_size),
        "vocab_size_multiple": 1,
        "src_words_min_frequency": 0,
        "tgt_words_min_frequency": 0,
        "data": {
            "corpus_1": {"path_src": f"{train}.{src}", "path_tgt": f"{train}.{tgt}", "transforms": []},
            "valid": {"path_src": f"{valid}.{src}", "path_tgt": f"{valid}.{tgt}", "transforms": []},
        },
        "training": {
            "model_path": str(work / "model"),
            "train_steps": updates,
            "valid_steps": 10**9,
            "save_checkpoint_steps": 10**9,
            "world_size": 1,
            "gpu_ranks": [],
            "num_workers": 0,
            "batch_type": "tokens",
            "batch_size": int(cfg.data.batch_tokens),
            "batch_size_multiple": 1,
            "normalization": "tokens",
            "accum_count": [1],
            "accum_steps": [0],
            "compute_dtype": PRECISIONS[precision][1],
            "optim": "adam",
            "adam_beta1": float(cfg.optimizer.betas[0]),
            "adam_beta2": float(cfg.optimizer.betas[1]),
            "learning_rate": float(cfg.optimizer.lr),
            "decay_method": "none",
            "warmup_steps": 0,
            "max_grad_norm": float(cfg.trainer.grad_clip),
            "label_smoothing": float(cfg.trainer.label_smoothing),
            "dropout": [float(enc.dropout)],
            "attention_dropout": [float(enc.dropout)],
            "dropout_steps": [0],
            "param_init_method": "xavier_uniform",
        },
        "model": {
            "architecture": "transformer",
            "hidden_size": int(enc.d_model),
            "layers": int(enc.layers),
            "heads": int(enc.heads),
            "transformer_ff": int(enc.ff_size),
            "layer_norm": "standard",
            "add_qkvbias": True,
            "add_final_linear_bias": True,
            "add_ffnbias": True,
            "share_embeddings": False,
            "share_decoder_embeddings": True,
            "generator_bias": False,
            "embeddings": {
                "word_vec_size": int(enc.d_model),
                "position_encoding": True,
                "position_encoding_type": "SinusoidalInterleaved",
            },
        },
    }


def train_eole(python: Path, work: Path, files: dict[str, Path], warmup: int, steps: int, precision: str) -> dict:
    import yaml

    config = eole_config(work, files, warmup + steps, precision)
    path, shim, timings = work / "eole_transformer_small.yaml", work / "eole_shim.py", work / "eole_steps.json"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    shim.write_text(SHIM)
    command = [str(python), str(shim), str(timings), "train", "--config", str(path)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    log = run(command, env=env, cwd=work)
    text = log.stdout + log.stderr
    parameters = [int(line.rsplit(":", 1)[1]) for line in text.splitlines() if "* number of parameters:" in line]
    timed = json.loads(timings.read_text())[warmup : warmup + steps]
    if len(timed) < steps:
        sys.exit(f"eole made {len(timed) + warmup} updates, fewer than {warmup + steps}:\n{text[-3000:]}")
    return figures(timed, parameters[0] if parameters else None, shlex.join(command))


def figures(timed: list[dict], parameters: int | None, command: str) -> dict:
    seconds = sum(s["seconds"] for s in timed)
    positions = sum(s["positions"] for s in timed)
    real = sum(s["real_positions"] for s in timed)
    tgt = sum(s["tgt_tokens"] for s in timed)
    return {
        "tgt_tokens_per_s": round(tgt / seconds, 1),
        "padded_positions_per_s": round(positions / seconds, 1),
        "padding": round(1 - real / positions, 4),
        "seconds": round(seconds, 3),
        "tgt_tokens_per_step": round(tgt / len(timed), 1),
        "parameters": parameters,
        "command": command,
    }


def train_ours(
    data: Path, warmup: int, steps: int, tag: str, work: Path, overrides: list[str] = (), precision: str = "fp32"
) -> dict:
    out = work / "ours"
    command = [
        sys.executable,
        "-m",
        "scripts.benchmarks.bench_train",
        "--preset",
        PRESET,
        "--threads",
        "1",
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
        f"data.path={data}",
        f"trainer.precision={PRECISIONS[precision][0]}",
        *overrides,
    ]
    run(command, cwd=ROOT)
    ours = json.loads((out / f"bench_train_{PRESET}_{tag}.json").read_text())
    return {
        "tgt_tokens_per_s": ours["tgt_tokens_per_s"],
        "padded_positions_per_s": ours["padded_positions_per_s"],
        "padding": ours["padding_measured_batches"],
        "seconds": ours["seconds"],
        "tgt_tokens_per_step": ours["tgt_tokens_per_step"],
        "parameters": ours["parameters"],
        "command": ours["command"],
        "commit": ours["commit"],
    }


def summarise(rounds: list[dict]) -> dict:
    """Per nmt side (one per trainer.matmul) and figure: each round's nmt / eole
    ratio and their median; each side's median."""
    table = {}
    for side in (name for name in rounds[0] if name != "eole"):
        for key in ("tgt_tokens_per_s", "padded_positions_per_s"):
            ratios = [r[side][key] / r["eole"][key] for r in rounds]
            table[f"{side} {key}"] = {
                "nmt": statistics.median(r[side][key] for r in rounds),
                "eole": statistics.median(r["eole"][key] for r in rounds),
                "ratios": [round(x, 3) for x in ratios],
                "median_ratio": round(statistics.median(ratios), 3),
            }
    table["padding"] = {side: statistics.median(r[side]["padding"] for r in rounds) for side in rounds[0]}
    return table


def print_table(table: dict, command: str) -> None:
    print(f"\n{command}\n")
    print("| figure (median of rounds) | nmt | eole 0.6.4 | nmt / eole, per round | median ratio |")
    print("| --- | ---: | ---: | --- | ---: |")
    for key, row in table.items():
        if key == "padding":
            continue
        side, figure = key.split(" ")
        name = {"tgt_tokens_per_s": "target tokens/s", "padded_positions_per_s": "padded positions/s"}[figure]
        print(
            f"| {name}, {side} | {row['nmt']:.0f} | {row['eole']:.0f} | "
            f"{', '.join(f'{r:.2f}' for r in row['ratios'])} | {row['median_ratio']:.2f}x |"
        )
    for side, share in table["padding"].items():
        print(f"| padding (src + tgt positions), {side} | {share:.1%} | | | |")


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out = ready_file(args.out, "compare_eole")
    command = "python -m scripts.peers.compare_eole " + shlex.join(sys.argv[1:] if argv is None else argv)
    data, work = Path(args.data).resolve(), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    python = ensure_venv(Path(args.venv))
    spm_path, vocab_path = prepare_data(data, work)
    files = piece_files(work, spm_path, vocab_path)
    rounds = []
    for number in range(args.rounds):
        sides = {
            f"nmt/{label}": train_ours(
                data, args.warmup, args.steps, f"eole_r{number}_{label}", work, overrides, args.precision
            )
            for label, overrides in args.side
        }
        sides["eole"] = train_eole(python, work, files, args.warmup, args.steps, args.precision)
        ours = sides[f"nmt/{args.side[0][0]}"]
        if ours["parameters"] != sides["eole"]["parameters"]:
            sys.exit(
                f"the two models differ: nmt {ours['parameters']:,} parameters, "
                f"eole {sides['eole']['parameters']} (see {work}/eole_transformer_small.yaml)"
            )
        rounds.append(sides)
        for name, row in sides.items():
            print(
                f"round {number + 1} {name:<16} {row['tgt_tokens_per_s']:>8.1f} target tokens/s "
                f"{row['padded_positions_per_s']:>8.1f} padded positions/s, padding {row['padding']:.1%} "
                f"({row['seconds']:.1f} s for {args.steps} updates, {row['parameters']:,} parameters)",
                flush=True,
            )
    table = summarise(rounds)
    print_table(table, command)
    result = {
        "command": command,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average_after": list(os.getloadavg()),
        "precision": args.precision,
        "cpu": cpu_description(read_cpuinfo()),
        "warmup": args.warmup,
        "steps": args.steps,
        "sides": {f"nmt/{label}": overrides for label, overrides in args.side},
        "table": table,
        "rounds": rounds,
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"(figures in {args.out})")
    return result


if __name__ == "__main__":
    main()
