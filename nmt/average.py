"""python -m nmt.average CKPT... --output FILE: average model weights.

Checkpoint averaging (as in Vaswani et al. 2017, Sec. 6.1: the last few
checkpoints of a run, averaged element-wise) usually adds a little BLEU for
free:

    theta_avg = (1/N) sum_i theta_i        for every floating-point tensor

The checkpoints must be of one model: the same sentencepiece models (else the
same id means another subword in each) and the same model config (else the
same tensor means another thing). Anything else is refused in one line that
names both files, before anything is written. The output keeps the config and
tokenizer of the first checkpoint and drops optimiser state, so it is for
translation only. The trainer's `trainer.average_last=N` uses the same
function at the end of a run.
"""

if __name__ == "__main__":      # first of all: Ctrl-C while torch loads is one line too
    from nmt import signals

    signals.install("; --output is written whole or not at all")

import argparse
import sys
from pathlib import Path

import torch

from nmt.data.tokenizer import check_same_vocabulary
from nmt.cli_checks import ArgumentParser, check_not_input, check_output, close_stdout, write_stdout
from nmt.errors import NmtError
from nmt.training.checkpoints import load_checkpoint, save_checkpoint


def config_difference(a, b, where: str = "model") -> str | None:
    """The first place where two nested configs differ, as 'key: A vs B', or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                side = "second" if key not in a else "first"
                return f"{where}.{key} only in the {side}"
            found = config_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            found = config_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def check_same_model(first: Path, first_state: dict, other: Path, other_state: dict) -> None:
    """Refuse two checkpoints whose vocabularies, model configs or tensors differ."""
    check_same_vocabulary(first, first_state["tokenizer"], other, other_state["tokenizer"], "averaging")
    difference = config_difference(first_state["config"].get("model"), other_state["config"].get("model"))
    if difference:
        raise NmtError(f"checkpoints {first} and {other} have different model configs ({difference[:160]}); "
                       "average checkpoints of one run")
    ours, theirs = first_state["model"], other_state["model"]
    if ours.keys() != theirs.keys() or any(theirs[k].shape != v.shape for k, v in ours.items()):
        raise NmtError(f"checkpoints {first} and {other} have different model shapes; average "
                       "checkpoints of one run")


def average_checkpoints(paths: list[Path]) -> dict:
    """The element-wise mean of the checkpoints' weights, as a checkpoint for
    translation; one checkpoint is in memory beside the running sum."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise NmtError("give at least one checkpoint to average")
    first = load_checkpoint(paths[0])
    total = {name: t.double() if t.is_floating_point() else t.clone() for name, t in first["model"].items()}
    for path in paths[1:]:
        state = load_checkpoint(path)
        check_same_model(paths[0], first, path, state)
        for name, tensor in state["model"].items():
            if tensor.is_floating_point():
                total[name] += tensor.double()
        del state
    averaged = {name: t.div(len(paths)).to(first["model"][name].dtype) if t.is_floating_point() else t
                for name, t in total.items()}
    result = {"config": first["config"], "tokenizer": first["tokenizer"], "model": averaged,
              "averaged_from": [str(p) for p in paths]}
    if "samples" in first:                 # the explorer's example sentences
        result["samples"] = first["samples"]
    return result


def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m nmt.average", description=__doc__.split("\n")[0])
    parser.add_argument("checkpoints", nargs="+", type=Path)
    parser.add_argument("--output", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        check_output(args.output)
        check_not_input("--output", args.output, [("--checkpoint", p) for p in args.checkpoints])
        path = save_checkpoint(average_checkpoints(args.checkpoints), args.output,
                               advice="free disk space or choose another --output; nothing was written")
    except NmtError as error:
        print(f"nmt: error: {error}", file=sys.stderr)
        return 1
    try:
        write_stdout(f"averaged {len(args.checkpoints)} checkpoints into {path}\n")
    except NmtError as error:
        print(f"nmt: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(close_stdout(main()))
