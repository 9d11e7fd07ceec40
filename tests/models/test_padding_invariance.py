"""Extra padding (data.pad_to_multiple) changes no real position's loss: every
encoder, decoder, attention and positional encoding masks what it pads."""

import pytest
import torch

from nmt.data.batching import make_batch
from nmt.models.build import build_model
from nmt.core.loss import label_smoothed_nll
from tests.helpers import make_config

SMALL = [f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
         for key, value in (("dropout", 0.0),)]
MODELS = {
    "transformer sinusoidal": ["model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
                               "model/positional=sinusoidal"],
    "transformer relative": ["model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
                             "model/positional=relative"],
    "transformer rotary": ["model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
                           "model/positional=rotary"],
    "transformer alibi": ["model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
                          "model/positional=alibi"],
    "gru bahdanau": ["model/encoder=gru", "model/decoder=gru", "model/attention=bahdanau"],
    "lstm luong local_p": ["model/encoder=lstm", "model/decoder=lstm", "model/attention=luong_general",
                           "model.attention.scope=local_p"],
    "lstm luong local_m": ["model/encoder=lstm", "model/decoder=lstm", "model/attention=luong_general",
                           "model.attention.scope=local_m"],
    "gru bridge mean": ["model/encoder=gru", "model/decoder=gru", "model/attention=luong_dot", "model/bridge=mean"],
}
TRANSFORMER_SIZE = [f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
                    for key, value in (("d_model", 16), ("layers", 1), ("heads", 2), ("ff_size", 32))]
EXAMPLES = [([5, 6, 7, 8, 9], [10, 11]), ([12, 13], [14, 15, 16, 17, 18, 19]), ([20], [21])]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_padding_to_a_multiple_changes_no_real_loss(name):
    overrides = MODELS[name] + SMALL + (TRANSFORMER_SIZE if "transformer" in name else [])
    torch.manual_seed(0)
    model = build_model(make_config(*overrides).model, 30, 30).eval()
    losses = []
    for multiple in (1, 8):
        batch = make_batch(EXAMPLES, pad_to_multiple=multiple)
        with torch.no_grad():
            out, _ = model(batch.src, batch.tgt[:, :-1])
        smoothed, _ = label_smoothed_nll(out.logits, batch.tgt[:, 1:], 0, 0.1)       # (B, T), 0 on padding
        losses.append(smoothed[:, :7])                                      # T is 7 unpadded
    assert losses[1].shape == losses[0].shape
    torch.testing.assert_close(losses[1], losses[0], atol=1e-5, rtol=1e-5)
