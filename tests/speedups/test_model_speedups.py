"""build_model(..., speedups=False) is the core's plain code alone; speedups=True
replaces its plain pieces (nn.Dropout, run_packed) with nmt.speedups' and
changes no parameter, no buffer and no result in eval mode; the cheap mask
drops what nn.Dropout drops, in distribution; with speedups off a model
learns a toy task."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from nmt.core.rnn_encoder import RNNEncoder, run_packed
from nmt.models.build import build_model
from nmt.speedups.dropout import Dropout
from nmt.speedups.model import install_model_speedups
from nmt.speedups.padded_rnn import run_padded
from tests.helpers import make_config

PRESETS = ["quickstart", "first_run", "rnn_bahdanau", "transformer_small"]
V = 40


def built(preset: str, speedups: bool, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(make_config(f"experiment={preset}").model, V, V, speedups=speedups)


def kinds(model) -> tuple[set, set]:
    dropouts = {type(m) for m in model.modules() if isinstance(m, (nn.Dropout, Dropout))}
    runs = {m.run_rnn for m in model.modules() if isinstance(m, RNNEncoder)}
    return dropouts, runs


@pytest.mark.parametrize("preset", PRESETS)
def test_speedups_off_is_the_plain_core_and_on_replaces_it(preset):
    plain, fast = built(preset, False), built(preset, True)
    dropouts, runs = kinds(plain)
    assert dropouts == {nn.Dropout} and runs <= {run_packed}
    dropouts, runs = kinds(fast)
    assert dropouts == {Dropout} and runs <= {run_padded}
    assert (runs == {run_padded}) == (preset != "transformer_small")
    p_plain = [m.p for m in plain.modules() if isinstance(m, nn.Dropout)]
    assert p_plain == [m.p for m in fast.modules() if isinstance(m, Dropout)]


@pytest.mark.parametrize("preset", PRESETS)
def test_the_same_parameters_and_eval_results_either_way(preset):
    plain, fast = built(preset, False).eval(), built(preset, True).eval()
    a, b = plain.state_dict(), fast.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    torch.manual_seed(1)
    src, tgt = torch.randint(4, V, (3, 7)), torch.randint(4, V, (3, 6))
    src[1, 4:] = 0                                            # padding (pad_id 0)
    with torch.no_grad():
        out_plain, out_fast = plain(src, tgt)[0].logits, fast(src, tgt)[0].logits
    if preset == "transformer_small":                         # eval dropout is the identity: bit for bit
        assert torch.equal(out_plain, out_fast)
    else:                                                     # run_padded equals packing to 1e-6
        assert torch.allclose(out_plain, out_fast, atol=1e-5)


def test_installing_reports_what_it_replaced_and_keeps_the_mode():
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.3)).eval()
    assert install_model_speedups(model) == ["dropout"]
    assert type(model[1]) is Dropout and model[1].p == 0.3 and not model[1].training
    assert install_model_speedups(nn.Linear(2, 2)) == []


def test_the_cheap_mask_drops_what_nn_dropout_drops():
    """Over 2^20 units at p = 0.1 both drop a fraction within 0.002 of p
    (the rate's std is 0.0003) and scale the kept ones by 1/q, q = 1 - p
    (the cheap mask's p rounds to a multiple of 2^-16: 6554/65536)."""
    torch.manual_seed(0)
    x = torch.ones(1024, 1024)
    for y, q in ((F.dropout(x, 0.1, training=True), 0.9), (Dropout(0.1).train()(x), 1 - 6554 / 65536)):
        assert abs(float((y == 0).float().mean()) - 0.1) < 0.002
        assert torch.allclose(y[y != 0].unique(), torch.tensor([1 / q]))
        assert abs(float(y.mean()) - 1.0) < 0.003


def test_with_speedups_off_a_model_learns_to_copy():
    """The quickstart GRU, built from the core's plain code alone (dropout 0.3
    everywhere so nn.Dropout is on the path), learns to copy 5-token
    sentences: in 60 updates cross-entropy falls to well below chance."""
    torch.manual_seed(0)
    config = make_config("experiment=quickstart", "model.encoder.dropout=0.3", "model.decoder.dropout=0.3",
                         "model.encoder.embed_dim=16", "model.encoder.hidden_size=32",
                         "model.decoder.embed_dim=16", "model.decoder.hidden_size=32")
    model = build_model(config.model, 12, 12, speedups=False).train()
    assert kinds(model) == ({nn.Dropout}, {run_packed})
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(60):
        src = torch.randint(4, 12, (16, 5))
        tgt = torch.cat([torch.full((16, 1), 2), src, torch.full((16, 1), 3)], 1)   # <s> copy </s>
        logits = model(src, tgt[:, :-1])[0].logits                                  # (B, T, V)
        loss = F.cross_entropy(logits.reshape(-1, 12), tgt[:, 1:].reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert last < 0.6 * first and last < 1.5        # chance is ln 12 = 2.48 (measured: 2.4 -> 1.1)
