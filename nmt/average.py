"""python -m nmt.average CKPT... --output FILE: average model weights.

Checkpoint averaging (as in Vaswani et al. 2017, Sec. 6.1: the last few
checkpoints of a run, averaged element-wise) usually adds a little BLEU for
free. The output keeps the config and tokenizer of the first checkpoint and
drops optimiser state, so it is for translation only.
"""

import argparse
import sys
from pathlib import Path

import torch

from nmt.errors import NmtError
from nmt.training.checkpoints import load_checkpoint, save_checkpoint


def average_checkpoints(paths: list[Path]) -> dict:
    if not paths:
        raise NmtError("give at least one checkpoint to average")
    states = [load_checkpoint(p) for p in paths]
    first = states[0]
    for path, state in zip(paths[1:], states[1:]):
        if state["model"].keys() != first["model"].keys() or any(
                state["model"][k].shape != v.shape for k, v in first["model"].items()):
            raise NmtError(f"{path} has another model shape than {paths[0]}; average checkpoints "
                           "of one run")
    averaged = {}
    for name, tensor in first["model"].items():
        if tensor.is_floating_point():
            averaged[name] = sum(s["model"][name].float() for s in states).div(len(states)).to(tensor.dtype)
        else:
            averaged[name] = tensor.clone()
    return {"config": first["config"], "tokenizer": first["tokenizer"], "model": averaged,
            "averaged_from": [str(p) for p in paths]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nmt.average", description=__doc__.split("\n")[0])
    parser.add_argument("checkpoints", nargs="+", type=Path)
    parser.add_argument("--output", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        if args.output.resolve() in [p.resolve() for p in args.checkpoints]:
            raise NmtError("--output would overwrite one of the inputs; choose a new file")
        path = save_checkpoint(average_checkpoints(args.checkpoints), args.output)
    except NmtError as error:
        print(f"nmt: error: {error}", file=sys.stderr)
        return 1
    print(f"averaged {len(args.checkpoints)} checkpoints into {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
