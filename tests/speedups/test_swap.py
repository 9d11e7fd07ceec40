"""nmt.speedups.swap: a class swapped in place keeps the parameters; the CPU condition."""

import torch
from torch import nn

from nmt.speedups.swap import eager_cpu, swap_class


class Doubled(nn.Linear):
    pass


def test_swap_class_swaps_exactly_that_class_in_place():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), Doubled(3, 1), nn.Linear(3, 2))
    weights = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    swapped = swap_class(model, nn.Linear, Doubled)
    assert swapped == [model[0], model[3]]                         # the ReLU and the Doubled left alone
    assert [type(m) for m in model] == [Doubled, nn.ReLU, Doubled, Doubled]
    assert all(torch.equal(weights[name], tensor) for name, tensor in model.state_dict().items())
    assert swap_class(model, nn.Linear, Doubled) == []            # none left
    assert len(swap_class(model, Doubled, nn.Linear)) == 3


def test_eager_cpu():
    x, w = torch.ones(2, 3), torch.ones(4, 3)
    assert eager_cpu(x, w)
    assert not eager_cpu(x.double(), w)                            # two dtypes
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not eager_cpu(x, w)
