"""ALiBi (Press et al. 2022) by hand: slopes, the bias matrix, its place in the
Transformer (encoder symmetric, decoder causal, cross none), cached decoding,
and the paper's claim: trained on short sentences, it decodes longer ones."""

from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from nmt.data.masks import padding_mask
from nmt.errors import NmtError
from nmt.models.decoders.transformer import TransformerDecoder
from nmt.models.encoders.transformer import TransformerEncoder
from nmt.models.memory import Memory
from nmt.models.positional.alibi import AlibiBias, AlibiPositions, alibi_bias, alibi_slopes
from nmt.models.positional.none import NoPositions
from nmt.models.transformer_attention import MultiHeadAttention

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
V, D, PAD = 13, 8, 0


def test_slopes_for_8_heads_are_halves():
    # 2^(-8/8) = 1/2 to start, ratio 1/2: 1/2, 1/4, ..., 1/256
    assert alibi_slopes(8) == [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]


def test_slopes_for_other_head_counts():
    # 2 heads: start 2^(-8/2) = 1/16, ratio 1/16 -> 1/16, 1/256
    assert alibi_slopes(2) == [1 / 16, 1 / 256]
    # 4 heads: 2^(-2) = 1/4 -> 1/4, 1/16, 1/64, 1/256
    assert alibi_slopes(4) == [1 / 4, 1 / 16, 1 / 64, 1 / 256]
    # 16 heads: 2^(-1/2) to start, the last is 2^(-8)
    assert alibi_slopes(16)[0] == pytest.approx(2 ** -0.5) and alibi_slopes(16)[-1] == 1 / 256
    # 6 heads (not a power of 2): the 4 of 4 heads, then every other of 8 heads'
    # [1/2, 1/4, 1/8, ...] -> 1/2, 1/8
    assert alibi_slopes(6) == [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]
    # 3 heads: the 2 of 2 heads, then the first of every other of 4 heads' -> 1/4
    assert alibi_slopes(3) == [1 / 16, 1 / 256, 1 / 4]


def test_bias_matrix_for_2_heads_and_4_positions_by_hand():
    slopes = torch.tensor(alibi_slopes(2))                     # [1/16, 1/256]
    bias = alibi_bias(slopes, torch.arange(4), torch.arange(4))
    # -m |i - j|; rows i (queries), columns j (keys)
    head0 = torch.tensor([[0, -1, -2, -3],
                          [-1, 0, -1, -2],
                          [-2, -1, 0, -1],
                          [-3, -2, -1, 0]]) / 16.0
    head1 = torch.tensor([[0, -1, -2, -3],
                          [-1, 0, -1, -2],
                          [-2, -1, 0, -1],
                          [-3, -2, -1, 0]]) / 256.0
    assert torch.equal(bias, torch.stack([head0, head1]))
    # a cached decoder step at position 3 over keys 0..3: the row -m * [3, 2, 1, 0]
    step = alibi_bias(slopes, torch.tensor([3]), torch.arange(4))
    assert torch.equal(step[:, 0], torch.stack([head0[3], head1[3]]))


def test_logits_get_exactly_minus_m_distance_after_scaling():
    # q = 0 makes q.k = 0, so the scaled logits are the bias alone;
    # softmax over keys 0..2 for query 2, head 0 (m = 1/16): exp(-2/16), exp(-1/16), exp(0)
    attn = MultiHeadAttention(2 * 4, 2, position=AlibiBias(4))        # Dh = 4
    q = torch.zeros(1, 2, 3, 4)                                        # (B, H, T, Dh)
    k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    causal = torch.tril(torch.ones(3, 3, dtype=torch.bool))[None, None]
    pos = torch.arange(3)
    _, w = attn.attend(q, k, v, causal, pos, pos, need_weights=True)
    e = torch.exp(torch.tensor([-2 / 16, -1 / 16, 0.0]))
    assert torch.allclose(w[0, 0, 2], e / e.sum(), atol=1e-6)
    assert torch.allclose(w[0, 0, 0], torch.tensor([1.0, 0.0, 0.0]))  # the future: 0
    # the fast path (SDPA with the bias as a float mask) gives the same output
    fast, _ = attn.attend(q, k, v, causal, pos, pos)
    slow, _ = attn.attend(q, k, v, causal, pos, pos, need_weights=True)
    assert torch.allclose(fast, slow, atol=1e-6)


def build(heads=2):
    torch.manual_seed(0)
    spec = AlibiPositions()
    enc = TransformerEncoder(V, d_model=D, layers=2, heads=heads, ff_size=16, dropout=0.0,
                             positional=spec)
    dec = TransformerDecoder(V, D, d_model=D, layers=2, heads=heads, ff_size=16, dropout=0.0,
                             positional=spec)
    return enc.eval(), dec.eval()


def test_no_position_embeddings_and_no_bias_in_cross_attention():
    enc, dec = build()
    x = torch.randn(2, 3, D)
    assert torch.equal(enc.position(x), x) and torch.equal(dec.position(x, start=5), x)
    assert all(isinstance(layer.self_attn.position, AlibiBias) for layer in enc.layers)
    assert all(isinstance(layer.self_attn.position, AlibiBias) for layer in dec.layers)
    assert all(type(layer.cross_attn.position) is not AlibiBias for layer in dec.layers)
    # no parameters: as many as with no positions at all
    bare = TransformerEncoder(V, d_model=D, layers=2, heads=2, ff_size=16, positional=NoPositions())
    assert sum(p.numel() for p in enc.parameters()) == sum(p.numel() for p in bare.parameters())


def test_encoder_is_symmetric_so_a_reversed_sentence_gives_reversed_states():
    # the stated choice: -m |i - j| cannot tell left from right
    enc, _ = build()
    src = torch.tensor([[4, 5, 6, 7, 8]])
    mask = padding_mask(src, PAD)
    forward = enc(src, mask).memory
    backward = enc(src.flip(1), mask).memory
    assert torch.allclose(forward.flip(1), backward, atol=1e-5)


@pytest.mark.parametrize("heads", [2, 4])
def test_cached_decoding_equals_teacher_forcing(heads):
    enc, dec = build(heads)
    src = torch.tensor([[4, 5, 6, 7, 3], [8, 9, 3, PAD, PAD]])
    tgt = torch.tensor([[2, 5, 6, 7, 8, 9, 10], [2, 10, 11, 3, PAD, PAD, PAD]])
    mask = padding_mask(src, PAD)
    memory = Memory(enc(src, mask).memory, mask)
    full = dec(tgt, None, memory, need_weights=True)
    state = dec.init_state(memory, None)
    steps = []
    for t in range(tgt.size(1)):
        logits, state, _ = dec.step(tgt[:, t], state, memory)
        steps.append(logits)
    assert torch.allclose(torch.stack(steps, 1), full.logits, atol=1e-5)


def test_yaml_and_kind():
    spec = instantiate(OmegaConf.load(CONFIGS / "model" / "positional" / "alibi.yaml"))
    assert isinstance(spec, AlibiPositions) and spec.kind == "alibi"
    with pytest.raises(NmtError, match="kind"):
        AlibiPositions(kind="rotary")
