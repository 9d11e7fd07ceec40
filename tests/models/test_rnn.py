"""RNN encoders (packed), the LSTMN encoder and the attentional RNN decoders."""

import pytest
import torch
from torch import nn

from nmt.core.masks import padding_mask
from nmt.core.attention.luong_general import GeneralAttention
from nmt.core.rnn_decoder import RNNDecoder
from nmt.core.lstmn import LSTMNEncoder
from nmt.core.rnn_encoder import RNNEncoder
from nmt.core.outputs import Memory


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_padding_costs_nothing_and_changes_nothing(cell, bidirectional):
    """A sentence alone and the same sentence padded in a batch give the same states."""
    torch.manual_seed(0)
    enc = RNNEncoder(20, cell, 8, 6, layers=2, bidirectional=bidirectional, dropout=0.0).eval()
    alone = torch.tensor([[5, 6, 7]])
    batch = torch.tensor([[5, 6, 7, 0, 0], [4, 5, 6, 7, 8]])
    a = enc(alone, padding_mask(alone, 0))
    b = enc(batch, padding_mask(batch, 0))
    assert torch.allclose(a.memory[0], b.memory[0, :3], atol=1e-6)
    assert torch.allclose(a.last[0], b.last[0], atol=1e-6)
    assert torch.all(b.memory[0, 3:] == 0)          # padded positions carry nothing
    assert enc.output_size == 6 and b.memory.shape == (2, 5, 6) and b.last.shape == (2, 6)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_bidirectional_encoder_splits_its_hidden_size_over_the_directions(cell):
    """hidden_size 6, bidirectional: 3 units per direction, states [h->; h<-] of 6,
    the decoder's size; `last` is [h_S-> ; h_1<-]."""
    torch.manual_seed(0)
    enc = RNNEncoder(20, cell, 8, 6, bidirectional=True, dropout=0.0).eval()
    assert enc.rnn.hidden_size == 3 and enc.rnn.bidirectional
    src = torch.tensor([[5, 6, 7, 0]])
    out = enc(src, padding_mask(src, 0))
    assert out.memory.shape == (1, 4, 6)
    assert torch.allclose(out.last[0, :3], out.memory[0, 2, :3], atol=1e-6)   # forward, last real token
    assert torch.allclose(out.last[0, 3:], out.memory[0, 0, 3:], atol=1e-6)   # backward, first token


def test_odd_bidirectional_hidden_size_is_one_clear_error():
    from nmt.base.errors import NmtError

    with pytest.raises(NmtError, match=r"hidden_size=7 must be even .* use 6 or 8, or model.encoder.bidirectional=false"):
        RNNEncoder(20, "gru", 8, 7, bidirectional=True)
    assert RNNEncoder(20, "gru", 8, 7, bidirectional=False).output_size == 7


def test_lstmn_first_step_is_an_lstm_cell_from_zero_state():
    """At t = 1 the tapes hold only the zero slot, so hs = cs = 0: an LSTM step
    from a zero state with the same weights."""
    torch.manual_seed(0)
    enc = LSTMNEncoder(10, embed_dim=4, hidden_size=3, dropout=0.0).eval()
    cell = nn.LSTMCell(4, 3)
    with torch.no_grad():
        # our gate order is [i, f, o, g]; LSTMCell's is [i, f, g, o]
        i, f, o, g = enc.gates.weight[:, :4].chunk(4)
        cell.weight_ih.copy_(torch.cat([i, f, g, o]))
        cell.weight_hh.zero_()
        bi, bf, bo, bg = enc.gates.bias.chunk(4)
        cell.bias_ih.copy_(torch.cat([bi, bf, bg, bo]))
        cell.bias_hh.zero_()
    src = torch.tensor([[5, 6]])
    out = enc(src, padding_mask(src, 0))
    h, _ = cell(enc.embed(src[:, 0]))
    assert torch.allclose(out.memory[0, 0], h[0], atol=1e-6)


def test_lstmn_reports_its_tape_attention_without_changing_anything():
    """v = 0 makes every score equal: row t spreads 1 / (t + 1) over the start
    slot and the t tokens before it."""
    torch.manual_seed(2)
    enc = LSTMNEncoder(10, embed_dim=4, hidden_size=3, dropout=0.0).eval()
    with torch.no_grad():
        enc.v.weight.zero_()
    src = torch.tensor([[5, 6, 7]])
    plain = enc(src, padding_mask(src, 0))
    collected = []
    out = enc(src, padding_mask(src, 0), self_weights=collected)
    assert torch.equal(plain.memory, out.memory)
    expected = torch.tensor([[1, 0, 0], [1 / 2, 1 / 2, 0], [1 / 3, 1 / 3, 1 / 3]])
    assert len(collected) == 1 and collected[0].shape == (1, 1, 3, 3)
    assert torch.allclose(collected[0][0, 0], expected, atol=1e-6)


def test_lstmn_second_step_attends_over_its_tape_by_hand():
    """With v = 0 every score is 0: at t = 2 the tape is {h0 = 0, h1}, so
    hs_2 = (0 + h1) / 2 and cs_2 = (0 + c1) / 2 feed the gates."""
    torch.manual_seed(1)
    enc = LSTMNEncoder(10, embed_dim=4, hidden_size=3, dropout=0.0).eval()
    with torch.no_grad():
        enc.v.weight.zero_()
    src = torch.tensor([[5, 6]])
    out = enc(src, padding_mask(src, 0))
    x = enc.embed(src)[0]
    i, f, o, g = enc.gates(torch.cat([x[0], torch.zeros(3)])).chunk(4)
    c1 = torch.sigmoid(i) * torch.tanh(g)
    h1 = torch.sigmoid(o) * torch.tanh(c1)
    i, f, o, g = enc.gates(torch.cat([x[1], h1 / 2])).chunk(4)
    c2 = torch.sigmoid(f) * c1 / 2 + torch.sigmoid(i) * torch.tanh(g)
    h2 = torch.sigmoid(o) * torch.tanh(c2)
    assert torch.allclose(out.memory[0, 1], h2, atol=1e-6)


def make_decoder(style, cell="lstm", input_feeding=True):
    torch.manual_seed(0)
    attention = GeneralAttention(query_dim=6, key_dim=4)
    return RNNDecoder(12, memory_dim=4, attention=attention, cell=cell, style=style, embed_dim=5,
                      hidden_size=6, layers=2, dropout=0.0, input_feeding=input_feeding).eval()


@pytest.mark.parametrize("style,cell,feeding", [("bahdanau", "gru", False), ("bahdanau", "lstm", False),
                                                ("luong", "lstm", True), ("luong", "gru", False)])
def test_step_by_step_equals_teacher_forcing(style, cell, feeding):
    dec = make_decoder(style, cell, feeding)
    memory = Memory(torch.randn(2, 3, 4), torch.tensor([[[True, True, False]], [[True, True, True]]]))
    init = torch.randn(2, 6)
    tgt = torch.tensor([[2, 5, 6, 7], [2, 8, 9, 3]])
    full = dec(tgt, dec.init_state(memory, init), memory)
    state = dec.init_state(memory, init)
    for t in range(tgt.size(1)):
        logits, state, weights = dec.step(tgt[:, t], state, memory)
        assert torch.allclose(logits, full.logits[:, t], atol=1e-5)
        assert torch.allclose(weights, full.weights[:, t], atol=1e-6)
    assert torch.all(full.weights[0, :, 2] == 0)    # the padded source position


def test_bahdanau_attends_from_the_previous_state():
    """Bahdanau: the first step's query is the initial state s_0 itself."""
    dec = make_decoder("bahdanau", "gru")
    memory = Memory(torch.randn(1, 3, 4), torch.ones(1, 1, 3, dtype=torch.bool))
    init = torch.randn(1, 6)
    state = dec.init_state(memory, init)
    _, _, weights = dec.step(torch.tensor([2]), state, memory)
    expected = dec.attention(init[:, None], dec.attention.prepare(memory.states), memory.states,
                             memory.mask).weights[:, 0]
    assert torch.allclose(weights, expected, atol=1e-6)


def test_reorder_state_follows_the_index():
    dec = make_decoder("luong")
    memory = Memory(torch.randn(2, 3, 4), torch.ones(2, 1, 3, dtype=torch.bool))
    state = dec.init_state(memory, torch.randn(2, 6))
    _, state, _ = dec.step(torch.tensor([2, 2]), state, memory)
    swapped = dec.reorder_state(state, torch.tensor([1, 0]))
    assert torch.equal(swapped["h"][0], state["h"][1]) and torch.equal(swapped["feed"][1], state["feed"][0])
    assert swapped["t"] == state["t"] == 1
