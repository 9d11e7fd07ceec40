"""run_padded gives what nn.GRU / nn.LSTM give over packed sequences: outputs
(0 at padding), final states and gradients, for every cell, direction and depth."""

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

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
    out, final = rnn(pack_padded_sequence(a, lengths, batch_first=True, enforce_sorted=False))
    packed_out, _ = pad_packed_sequence(out, batch_first=True, total_length=6)
    packed_final = final[0] if isinstance(final, tuple) else final
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
    out, _ = rnn(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
    pad_packed_sequence(out, batch_first=True)[0].sum().backward()
    packed = {n: p.grad.clone() for n, p in rnn.named_parameters()}
    rnn.zero_grad()
    run_padded(rnn, x, lengths)[0].sum().backward()
    for name, p in rnn.named_parameters():
        assert torch.allclose(p.grad, packed[name], atol=1e-6), name
