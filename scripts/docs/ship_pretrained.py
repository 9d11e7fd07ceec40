"""Write the shipped copy of a trained run's checkpoint: nmt/pretrained/NAME/model.pt.

    python -m scripts.docs.ship_pretrained RUN/checkpoints/best.pt multi30k-de-en --dtype float16

The copy keeps what translating needs (config, sentencepiece models, fingerprint,
the validation samples the explorer offers) and the weights rounded to half
precision; the optimiser, schedule, RNG and progress (what resuming needs) are left
out. The run's data.path and cache_dir, folders of the machine it trained on, become
the folders a user's own run would use (data/multi30k, as `nmt-data multi30k
data/multi30k` writes, and data). The copy is read back through load_checkpoint,
and its greedy translations of the samples are compared with the original's.
"""

import argparse
import sys
from pathlib import Path

import torch

from nmt.pretrained import CHECKPOINT, FOLDER, MODELS
from nmt.store.checkpoints import data_fingerprint, load_checkpoint, save_checkpoint
from nmt.translator import Translator

KEPT = ("config", "tokenizer", "samples", "sample_references")
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def shipped_state(state: dict, dtype: torch.dtype, data_path: str) -> dict:
    """The state to ship: the kept fields, weights in `dtype`, machine folders replaced."""
    out = {key: state[key] for key in KEPT if key in state}
    config = dict(out["config"], cache_dir="data")
    config["data"] = dict(config["data"], path=data_path)
    out["config"] = config
    out["fingerprint"] = data_fingerprint(config["data"], out["tokenizer"])
    out["model"] = {name: t.to(dtype) if t.is_floating_point() else t for name, t in state["model"].items()}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint", type=Path, help="the trained run's best.pt")
    parser.add_argument("name", choices=sorted(MODELS))
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float16")
    parser.add_argument("--data-path", default="data/multi30k", help="data.path stored in the copy")
    args = parser.parse_args(argv)
    state = load_checkpoint(args.checkpoint)
    out = FOLDER / args.name / CHECKPOINT
    save_checkpoint(shipped_state(state, DTYPES[args.dtype], args.data_path), out)
    load_checkpoint(out)                                   # the checks every user's load runs
    samples = state.get("samples") or []
    fp32 = [t.text for t in Translator.from_checkpoint(args.checkpoint, device="cpu").translate(samples)]
    half = [t.text for t in Translator.from_checkpoint(out, device="cpu").translate(samples)]
    same = sum(a == b for a, b in zip(fp32, half))
    print(f"{out}: {out.stat().st_size} bytes; {same} of {len(samples)} greedy sample translations "
          f"equal the original's")
    for a, b in zip(fp32, half):
        if a != b:
            print(f"  float32: {a}\n  {args.dtype}: {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
