"""Model-side equivalence of the nmt/core move: 30 training updates of each preset's
model (dropout on, Adam, one fixed random batch of mixed lengths, seed 0), run by the
code at one commit; prints a digest and writes losses and final weights to OUT.

    PYTHONPATH=TREE python benchmarks/core_equivalence/updates.py OUT.pt [--speedups off]

Run it once with PYTHONPATH at a checkout before the move and once after, then
compare the two files with compare.py. build_model's `speedups` argument exists only
after the move; before it, the speedups were always on.
"""

import argparse
import inspect

import torch
import torch.nn.functional as F
from hydra import compose, initialize_config_dir

from nmt.config_files import CONFIGS
from nmt.models.build import build_model

PRESETS = ["quickstart", "first_run", "rnn_bahdanau", "transformer_small"]
EXTRA = {"rnn_multihead": ["experiment=rnn_bahdanau", "model/attention=multihead"]}
V, B, S, T, UPDATES = 50, 8, 9, 7, 30


def model_config(overrides):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose("config", overrides=overrides).model


def run(overrides, speedups: bool) -> dict:
    torch.manual_seed(0)
    kwargs = {"speedups": speedups} if "speedups" in inspect.signature(build_model).parameters else {}
    model = build_model(model_config(overrides), V, V, **kwargs).train()
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    src, tgt = torch.randint(4, V, (B, S)), torch.randint(4, V, (B, T + 1))
    src[torch.arange(S)[None, :] >= torch.randint(3, S + 1, (B,))[:, None]] = 0    # padding, pad_id 0
    tgt[:, 0] = 2
    losses = []
    for _ in range(UPDATES):
        out, penalty = model(src, tgt[:, :-1])
        loss = F.cross_entropy(out.logits.reshape(-1, V), tgt[:, 1:].reshape(-1), ignore_index=0) + penalty
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    return {"losses": losses, "weights": {k: v.clone() for k, v in model.state_dict().items()}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--speedups", choices=["on", "off"], default="on")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cases = {name: [f"experiment={name}"] for name in PRESETS} | EXTRA
    results = {name: run(overrides, args.speedups == "on") for name, overrides in cases.items()}
    for name, result in results.items():
        print(f"{name:18} loss[0] {result['losses'][0]:.6f}  loss[29] {result['losses'][-1]:.6f}")
    torch.save(results, args.out)


if __name__ == "__main__":
    main()
