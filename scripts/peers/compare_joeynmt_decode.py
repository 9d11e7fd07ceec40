"""Decoding speed of nmt against JoeyNMT 2.3.0: beam search on test_2016_flickr,
same model size, same vocabulary, same output length, same machine, same run.

    python -m scripts.peers.compare_joeynmt_decode --data ../shared/data/multi30k --updates 20 --rounds 2

Both sides train `transformer_small` (JoeyNMT: the equivalent config that
scripts/peers/compare_joeynmt.py writes) for the same few updates on the same data
and sentencepiece model, then translate the same test sentences from a file
with their own command-line tools:

    python -m nmt.translate --checkpoint last.pt --beam-size 5 --batch-size 64 \\
        --min-length L-1 --max-length-ratio 0 --max-length-extra L --input test.de --output out.en
    python -m joeynmt translate joey.yaml < test.de > out.en
        (testing: load_model latest.ckpt, beam_size 5, batch_size 64 sentences,
         min_output_length L, max_output_length L)

so every sentence takes L decoder steps on both sides: nmt writes L - 1
subwords and eos, JoeyNMT L subwords, its last step ending the search (the
script counts the subwords written). The same search work per sentence,
whatever the two barely trained models have learnt. Each timing is a whole
command minus the same command on one sentence (imports, loading the model);
the rounds alternate the two sides.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from nmt.base.provenance import git_commit

from scripts.peers import compare_joeynmt as joey  # the venv, data and config of the training comparison
from scripts.out_path import ready_file

ROOT = Path(__file__).resolve().parents[2]

PRESET = "transformer_small"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    joey.shared_arguments(parser, "compare_joeynmt_decode.json")
    parser.add_argument("--updates", type=int, default=20, help="training updates of each model")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per batch")
    parser.add_argument("--max-length", type=int, default=40, help="L, output subwords at most")
    parser.add_argument("--limit", type=int, default=1000, help="first N test sentences")
    return parser.parse_args(argv)


def timed(command: list[str], stdin_path: Path | None = None, stdout_path: Path | None = None, env=None) -> float:
    """Wall-clock seconds of a command that must succeed."""
    start = time.perf_counter()
    with open(stdin_path or os.devnull, "rb") as stdin, open(stdout_path or os.devnull, "wb") as stdout:
        result = subprocess.run(
            command, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
        )
    seconds = time.perf_counter() - start
    if result.returncode:
        sys.exit(f"failed ({result.returncode}): {shlex.join(command)}\n{result.stderr[-3000:]}")
    return seconds


def train_ours(data: Path, work: Path, updates: int) -> Path:
    run_dir = work / f"ours_decode_model_{updates}"
    checkpoint = run_dir / "checkpoints" / "last.pt"
    if not checkpoint.is_file():
        joey.run(
            [
                sys.executable,
                "-m",
                "nmt.train",
                f"experiment={PRESET}",
                f"data.path={data}",
                f"trainer.max_steps={updates}",
                f"trainer.val_every={updates}",
                "trainer.val_max_sentences=8",
                "trainer.heatmap_sentences=0",
                "trainer.keep_last=0",
                f"hydra.run.dir={run_dir}",
            ],
            cwd=ROOT,
        )
    return checkpoint


def train_theirs(python: Path, work: Path, spm_path: Path, vocab_path: Path, updates: int, args) -> Path:
    """JoeyNMT's model, trained `updates` steps: the translate config that loads it."""
    import yaml

    joey.train_joey(python, PRESET, work, spm_path, vocab_path, 1, updates - 1)
    config = joey.joey_config(PRESET, work, spm_path, vocab_path, updates)
    config["testing"].update(
        {
            "beam_size": args.beam_size,
            "batch_size": args.batch_size,
            "batch_type": "sentence",
            "max_output_length": args.max_length,
            "min_output_length": args.max_length,
            "n_best": 1,
            "load_model": str(Path(config["model_dir"]) / "latest.ckpt"),
        }
    )
    path = work / f"joey_{PRESET}_decode.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def subwords(path: Path, spm_path: Path) -> list[int]:
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=str(spm_path))
    return [len(processor.encode(line)) for line in path.read_text(encoding="utf-8").splitlines()]


def main(argv=None) -> None:
    args = parse_args(argv)
    args.out = ready_file(args.out, "compare_joeynmt_decode")
    command = "python -m scripts.peers.compare_joeynmt_decode " + shlex.join(sys.argv[1:] if argv is None else argv)
    data, work = Path(args.data).resolve(), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    python = joey.ensure_venv(Path(args.venv))
    spm_path, vocab_path = joey.prepare_data(data, work)
    sources = (work / "data" / "test_2016_flickr.de").read_text(encoding="utf-8").splitlines()[: args.limit]
    test_in, one_in = work / "decode_test.de", work / "decode_one.de"
    test_in.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    one_in.write_text(sources[0] + "\n", encoding="utf-8")

    ours_ckpt = train_ours(data, work, args.updates)
    theirs_cfg = train_theirs(python, work, spm_path, vocab_path, args.updates, args)
    joey_env = {**os.environ, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}

    def ours(source: Path, output: Path) -> float:
        return timed(
            [
                sys.executable,
                "-m",
                "nmt.translate",
                "--checkpoint",
                str(ours_ckpt),
                "--beam-size",
                str(args.beam_size),
                "--batch-size",
                str(args.batch_size),
                "--max-length-ratio",
                "0",
                "--max-length-extra",
                str(args.max_length),
                "--min-length",
                str(args.max_length - 1),
                "--input",
                str(source),
                "--output",
                str(output),
            ]
        )

    def theirs(source: Path, output: Path) -> float:
        # (its -o option fails in 2.3.0: 'BaseConfig' object has no attribute 'n_best'; stdout works)
        return timed(
            [str(python), "-m", "joeynmt", "translate", str(theirs_cfg)],
            stdin_path=source,
            stdout_path=output,
            env=joey_env,
        )

    rows = []
    for round_ in range(args.rounds):
        for side, translate in (("nmt", ours), ("joeynmt", theirs)):
            output = work / f"decode_{side}.en"
            startup = translate(one_in, work / f"decode_{side}_one.en")
            total = translate(test_in, output)
            lengths = subwords(output, spm_path)
            seconds = max(1e-9, total - startup)
            row = {
                "round": round_ + 1,
                "side": side,
                "sentences": len(lengths),
                "seconds": round(seconds, 2),
                "startup_seconds": round(startup, 2),
                "sentences_per_s": round(len(lengths) / seconds, 2),
                "output_subwords_per_s": round(sum(lengths) / seconds, 1),
                "mean_output_subwords": round(sum(lengths) / max(1, len(lengths)), 2),
            }
            rows.append(row)
            print(
                f"round {row['round']} {side:<8} {row['sentences_per_s']:>7.2f} sentences/s "
                f"{row['output_subwords_per_s']:>8.1f} output subwords/s ({row['seconds']:.1f} s "
                f"after {row['startup_seconds']:.1f} s start-up; mean output "
                f"{row['mean_output_subwords']} subwords)",
                flush=True,
            )
    ratios = [a["sentences_per_s"] / b["sentences_per_s"] for a, b in zip(rows[::2], rows[1::2])]
    print(f"\n{command}\nnmt / JoeyNMT sentences/s per round: {', '.join(f'{r:.2f}x' for r in ratios)}")
    Path(args.out).write_text(
        json.dumps(
            {
                "command": command,
                "commit": git_commit(),
                "date": time.strftime("%Y-%m-%d %H:%M"),
                "updates": args.updates,
                "beam_size": args.beam_size,
                "batch_size": args.batch_size,
                "max_length": args.max_length,
                "rows": rows,
                "ratios": [round(r, 3) for r in ratios],
            },
            indent=1,
        )
        + "\n"
    )
    print(f"(figures in {args.out})")


if __name__ == "__main__":
    main()
