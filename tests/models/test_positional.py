"""Positional encodings checked by hand: sinusoidal, learned, rotary, Shaw relative."""

import math
from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from nmt.base.errors import NmtError
from nmt.core.positional.learned import LearnedPositions
from nmt.core.positional.none import NoPositions
from nmt.core.positional.relative import RelativePositions, RelativeTerms, relative_index
from nmt.core.positional.rotary import RotaryPositions, rotate_pairs
from nmt.core.positional.sinusoidal import SinusoidalPositions, sinusoidal_table
from nmt.core.multihead import MultiHeadAttention

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_sinusoidal_by_hand():
    table = sinusoidal_table(torch.arange(2), 4)
    # pos 0: sin 0, cos 0, sin 0, cos 0
    assert torch.allclose(table[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))
    # pos 1, d=4: i=0 -> 1/10000^0 = 1; i=2 -> 1/10000^(2/4) = 0.01
    expected = torch.tensor([math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)])
    assert torch.allclose(table[1], expected, atol=1e-6)


def test_sinusoidal_odd_dim_and_offset():
    assert sinusoidal_table(torch.arange(3), 5).shape == (3, 5)
    layer = SinusoidalPositions().input_layer(4)
    x = torch.zeros(1, 2, 4)
    # start=1 adds positions 1 and 2
    assert torch.allclose(layer(x, start=1)[0], sinusoidal_table(torch.arange(1, 3), 4))


def test_rotary_turns_a_pair_by_position_times_theta():
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 2.0]])    # (T=3, 2)
    out = rotate_pairs(x, torch.tensor([0, 1, 3]))
    # theta_0 = 10000^0 = 1: angles 0, 1, 3 rad; [0, 2] turned by 3 -> [-2 sin 3, 2 cos 3]
    expected = torch.tensor([[1.0, 0.0],
                             [math.cos(1), math.sin(1)],
                             [-2 * math.sin(3), 2 * math.cos(3)]])
    assert torch.allclose(out, expected, atol=1e-6)
    # d=4: second pair turns by pos * 10000^(-2/4) = 0.01 pos
    out = rotate_pairs(torch.tensor([[0.0, 0.0, 1.0, 0.0]]), torch.tensor([2]))
    assert torch.allclose(out, torch.tensor([[0.0, 0.0, math.cos(0.02), math.sin(0.02)]]), atol=1e-6)


def test_rotary_dot_products_depend_only_on_offset():
    torch.manual_seed(0)
    q, k = torch.randn(1, 8), torch.randn(1, 8)
    def dot(m, n):
        return (rotate_pairs(q, torch.tensor([m])) * rotate_pairs(k, torch.tensor([n]))).sum()
    assert torch.allclose(dot(2, 5), dot(10, 13), atol=1e-5)
    assert torch.allclose(dot(7, 3), dot(4, 0), atol=1e-5)
    assert not torch.allclose(dot(2, 5), dot(2, 6), atol=1e-3)


def test_rotary_needs_even_head_size():
    with pytest.raises(NmtError, match="even head size"):
        RotaryPositions().attention_layer(3)


def test_relative_index_clips():
    # offsets j - i for i, j in 0..3, clipped to [-1, 1], shifted by +1
    expected = torch.tensor([[1, 2, 2], [0, 1, 2], [0, 0, 1]])
    assert torch.equal(relative_index(torch.arange(3), torch.arange(3), 1), expected)


def shaw_by_hand():
    terms = RelativeTerms(d_head=2, max_relative=1)
    with torch.no_grad():
        # rows are offsets -1, 0, +1
        terms.key_table.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]]))
        terms.value_table.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 10.0]]))
    return terms


def test_relative_key_term_by_hand():
    terms = shaw_by_hand()
    q = torch.tensor([[1.0, 1.0], [1.0, 2.0], [3.0, 0.0]])[None, None]   # (1, 1, 3, 2)
    pos = torch.arange(3)
    # row 0, offsets [0, 1, 2->1]:   [1,1].[0,1]=1, [1,1].[2,0]=2, 2
    # row 1, offsets [-1, 0, 1]:     [1,2].[1,0]=1, [1,2].[0,1]=2, [1,2].[2,0]=2
    # row 2, offsets [-2->-1, -1, 0]: [3,0].[1,0]=3, 3, [3,0].[0,1]=0
    expected = torch.tensor([[1.0, 2.0, 2.0], [1.0, 2.0, 2.0], [3.0, 3.0, 0.0]])
    assert torch.allclose(terms.bias(q, pos, pos)[0, 0], expected)


def test_relative_value_term_by_hand():
    terms = shaw_by_hand()
    weights = torch.tensor([[0.5, 0.25, 0.25], [1.0, 0.0, 0.0], [0.2, 0.3, 0.5]])[None, None]
    pos = torch.arange(3)
    # row 0: offsets [0, 1, 1]   -> 0.5 [0,1] + 0.5 [0,10] = [0, 5.5]
    # row 1: offsets [-1, 0, 1]  -> 1.0 [1,0]              = [1, 0]
    # row 2: offsets [-1, -1, 0] -> 0.5 [1,0] + 0.5 [0,1]  = [0.5, 0.5]
    expected = torch.tensor([[0.0, 5.5], [1.0, 0.0], [0.5, 0.5]])
    assert torch.allclose(terms.values(weights, pos, pos)[0, 0], expected)


def test_relative_attention_matches_shaw_formula():
    """One head, identity projections: e_ij = x_i (x_j + a_ij^K)^T / sqrt(2),
    z_i = sum_j alpha_ij (x_j + a_ij^V), written as loops."""
    terms = shaw_by_hand()
    attn = MultiHeadAttention(2, 1, position=terms)
    with torch.no_grad():
        for lin in (attn.w_q, attn.w_k, attn.w_v, attn.w_o):
            lin.weight.copy_(torch.eye(2))
            lin.bias.zero_()
    x = torch.tensor([[0.5, -1.0], [1.0, 0.0], [0.0, 2.0]])
    out, weights = attn(x[None], x[None], torch.ones(1, 1, 1, 3, dtype=torch.bool))
    a = lambda table, i, j: table[max(-1, min(1, j - i)) + 1]   # noqa: E731
    for i in range(3):
        e = torch.stack([x[i] @ (x[j] + a(terms.key_table, i, j)) / math.sqrt(2) for j in range(3)])
        alpha = e.softmax(0)
        z = sum(alpha[j] * (x[j] + a(terms.value_table, i, j)) for j in range(3))
        assert torch.allclose(weights[0, 0, i], alpha, atol=1e-6)
        assert torch.allclose(out[0, i], z, atol=1e-6)


def test_learned_adds_its_table_and_refuses_long_sentences():
    layer = LearnedPositions(max_len=4).input_layer(3)
    x = torch.zeros(2, 3, 3)
    assert torch.allclose(layer(x, start=1)[1], layer.table.weight[1:4])
    with pytest.raises(NmtError, match="raise model.positional.max_len or lower data.max_len"):
        layer(torch.zeros(1, 5, 3))
    with pytest.raises(NmtError):
        layer(torch.zeros(1, 1, 3), start=4)


def test_none_changes_nothing():
    x = torch.randn(2, 3, 4)
    assert torch.equal(NoPositions().input_layer(4)(x), x)
    assert NoPositions().attention_layer(2).bias(x, torch.arange(3), torch.arange(3)) is None


@pytest.mark.parametrize("kind", ["sinusoidal", "learned", "relative", "rotary", "alibi", "none"])
def test_yaml_builds_its_kind(kind):
    cfg = OmegaConf.load(CONFIGS / "model" / "positional" / f"{kind}.yaml")
    spec = instantiate(cfg)
    assert spec.kind == kind == cfg.kind


def test_kind_must_match_target():
    with pytest.raises(NmtError, match="kind"):
        RelativePositions(kind="rotary")
    assert RelativePositions(max_relative=2).max_relative == 2
