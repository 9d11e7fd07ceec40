"""Compare two files of updates.py: per case, whether the 30 losses are equal bit
for bit and every final weight torch.equal, else the largest differences.

    python benchmarks/core_equivalence/compare.py BEFORE.pt AFTER.pt
"""

import sys

import torch


def main(before_path, after_path):
    before, after = torch.load(before_path), torch.load(after_path)
    for name in before:
        a, b = before[name], after[name]
        same_losses = a["losses"] == b["losses"]
        same_keys = list(a["weights"]) == list(b["weights"])
        equal = same_keys and all(torch.equal(a["weights"][k], b["weights"][k]) for k in a["weights"])
        loss_gap = max(abs(x - y) for x, y in zip(a["losses"], b["losses"]))
        weight_gap = max((a["weights"][k] - b["weights"][k]).abs().max().item()
                         for k in a["weights"] if k in b["weights"] and a["weights"][k].is_floating_point())
        print(f"{name:18} losses bit for bit: {same_losses}  weights torch.equal: {equal}  "
              f"max |loss diff| {loss_gap:.3g}  max |weight diff| {weight_gap:.3g}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
