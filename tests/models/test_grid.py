"""Every encoder under every decoder, every attention and scope, bridge and
positional encoding: built from the configs, one forward and backward pass."""

import pytest
import torch

from nmt.base.errors import NmtError
from nmt.models.build import build_model
from tests.helpers import make_config

SMALL = {
    "gru": ["model.encoder.embed_dim=8", "model.encoder.hidden_size=16"],   # 8 per direction
    "lstm": ["model.encoder.embed_dim=8", "model.encoder.hidden_size=16"],
    "lstmn": ["model.encoder.embed_dim=8", "model.encoder.hidden_size=16"],
    "transformer": ["model.encoder.d_model=16", "model.encoder.heads=2", "model.encoder.layers=1",
                    "model.encoder.ff_size=32"],
}
DECODERS = {
    "gru_bahdanau": ["model/decoder=gru", "model.decoder.style=bahdanau"],
    "lstm_luong": ["model/decoder=lstm", "model.decoder.style=luong"],
    "lstm_luong_nofeed": ["model/decoder=lstm", "model.decoder.input_feeding=false"],
    "transformer": ["model/decoder=transformer", "model/bridge=zero", "model.decoder.d_model=16",
                    "model.decoder.heads=2", "model.decoder.layers=1", "model.decoder.ff_size=32"],
}
RNN_DEC = ["model.decoder.embed_dim=8", "model.decoder.hidden_size=16"]


def forward_backward(overrides):
    cfg = make_config("data=toy", *overrides)
    model = build_model(cfg.model, 30, 31)
    src = torch.tensor([[5, 6, 7, 8, 0], [9, 10, 11, 12, 13]])
    tgt = torch.tensor([[2, 5, 6, 3, 0], [2, 7, 8, 9, 3]])
    out, penalty = model(src, tgt[:, :-1], need_weights=True)
    assert out.logits.shape == (2, 4, 31)
    assert out.weights.shape == (2, 4, 5)
    if "model.attention.scope=local_p" in overrides:   # Gaussian not renormalised (Luong 2015)
        assert torch.all(out.weights.sum(-1) <= 1 + 1e-5)
    else:
        assert torch.allclose(out.weights.sum(-1), torch.ones(2, 4), atol=1e-5)
    assert torch.all(out.weights[0, :, 4] == 0)               # padding gets nothing
    loss = out.logits.logsumexp(-1).mean() + penalty
    if out.log_prob is not None:
        loss = loss + out.log_prob.sum()
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert any(g is not None and g.abs().sum() > 0 for g in grads)


@pytest.mark.parametrize("encoder", sorted(SMALL))
@pytest.mark.parametrize("decoder", sorted(DECODERS))
def test_every_encoder_with_every_decoder(encoder, decoder):
    positional = ["model/positional=sinusoidal"] if "transformer" in (encoder, decoder) else []
    rnn = RNN_DEC if decoder != "transformer" else []
    forward_backward([f"model/encoder={encoder}", *SMALL[encoder], *DECODERS[decoder], *rnn, *positional])


@pytest.mark.parametrize("attention", ["bahdanau", "luong_dot", "luong_general", "luong_concat",
                                       "luong_location", "scaled_dot", "cosine", "multihead"])
@pytest.mark.parametrize("scope", ["global", "local_m", "local_p", "hard"])
def test_every_attention_and_scope_in_a_model(attention, scope):
    forward_backward(["model/encoder=gru", *SMALL["gru"], "model/decoder=gru", *RNN_DEC,
                      f"model/attention={attention}", f"model.attention.scope={scope}",
                      "model.attention.window=1"])


@pytest.mark.parametrize("bridge", ["last", "mean", "zero", "zhou", "han", "structured"])
def test_every_bridge_in_a_model(bridge):
    forward_backward(["model/encoder=lstm", *SMALL["lstm"], "model/decoder=lstm", *RNN_DEC,
                      f"model/bridge={bridge}"])


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "relative", "rotary", "none"])
def test_every_positional_encoding_in_a_model(positional):
    forward_backward(["model/encoder=transformer", *SMALL["transformer"], *DECODERS["transformer"],
                      f"model/positional={positional}"])


@pytest.mark.parametrize("overrides,message", [
    (["model/decoder=transformer", "model/bridge=zero", "model.attention.scope=local_p"],
     "works with RNN decoders only"),
    (["model/decoder=transformer", "model/bridge=structured"], "model/bridge=zero"),
    (["model/positional=rotary"], "needs a Transformer"),
    (["model/attention=luong_dot", "model.encoder.hidden_size=8", "model.decoder.hidden_size=16"],
     "luong_general"),
    (["model/encoder=gru", "model.encoder.hidden_size=9"], "must be even for a bidirectional"),
])
def test_impossible_combinations_are_one_clear_line(overrides, message):
    cfg = make_config("data=toy", *overrides)
    with pytest.raises(NmtError, match=message):
        build_model(cfg.model, 30, 31)
