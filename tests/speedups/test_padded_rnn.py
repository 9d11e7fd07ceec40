"""nmt.speedups.padded_rnn.run_padded gives what the core's plain piece,
nmt.core.rnn_encoder.run_packed (nn.GRU / nn.LSTM over packed sequences),
gives: outputs (0 at padding), final states and gradients, to 1e-6, for
every cell, direction and depth."""

import pytest
import torch
from torch import nn

from nmt.core.rnn_encoder import run_packed
from nmt.speedups.padded_rnn import run_padded


@pytest.mark.parametrize("cell", [nn.GRU, nn.LSTM])
@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("layers", [1, 2])
def test_same_as_packed_sequences(cell, bidirectional, layers):
    torch.manual_seed(0)
    rnn = cell(5, 4, num_layers=layers, bidirectional=bidirectional, batch_first=True).eval()
    lengths = torch.tensor([6, 1, 4, 6, 2])
    x = torch.randn(5, 6, 5)
    x[torch.arange(6)[None, :] >= lengths[:, None]] = 7.0   # padding that must not leak in

    a = x.clone().requires_grad_()
    packed_out, packed_final = run_packed(rnn, a, lengths)
    (packed_out.square().sum() + packed_final.sum()).backward()

    b = x.clone().requires_grad_()
    padded_out, padded_final = run_padded(rnn, b, lengths)
    (padded_out.square().sum() + padded_final.sum()).backward()

    assert torch.allclose(padded_out, packed_out, atol=1e-6)
    assert torch.allclose(padded_final, packed_final, atol=1e-6)
    assert torch.allclose(b.grad, a.grad, atol=1e-6)
    for p in rnn.parameters():              # parameter gradients accumulated: packed, then padded
        assert p.grad is not None
    assert torch.equal(padded_out[1, 1:], torch.zeros_like(padded_out[1, 1:]))


def test_parameter_gradients_match():
    torch.manual_seed(1)
    rnn = nn.GRU(3, 2, bidirectional=True, batch_first=True)
    lengths = torch.tensor([3, 1])
    x = torch.randn(2, 3, 3)
    run_packed(rnn, x, lengths)[0].sum().backward()
    packed = {n: p.grad.clone() for n, p in rnn.named_parameters()}
    rnn.zero_grad()
    run_padded(rnn, x, lengths)[0].sum().backward()
    for name, p in rnn.named_parameters():
        assert torch.allclose(p.grad, packed[name], atol=1e-6), name
