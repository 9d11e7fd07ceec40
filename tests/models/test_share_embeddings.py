"""model.share_embeddings: one table for source and target subwords (three-way tying)."""

import pytest
import torch

from nmt.base.errors import NmtError
from nmt.models.build import build_model, count_parameters
from nmt.training.config_checks import check_config
from tests.helpers import make_config, one_thread, train  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("one_thread")

V = 40
TRANSFORMER = ("model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
               "model/attention=scaled_dot", "model/positional=sinusoidal",
               "model.encoder.d_model=16", "model.decoder.d_model=16", "model.encoder.heads=2",
               "model.decoder.heads=2", "model.encoder.ff_size=32", "model.decoder.ff_size=32",
               "model.encoder.layers=1", "model.decoder.layers=1")
LSTM = ("model.encoder.embed_dim=16", "model.encoder.hidden_size=16", "model.decoder.embed_dim=16",
        "model.decoder.hidden_size=16", "model.encoder.bidirectional=false")


def model_of(*overrides, src_vocab=V, tgt_vocab=V):
    torch.manual_seed(0)
    return build_model(make_config(*overrides).model, src_vocab, tgt_vocab)


def test_transformer_ties_all_three_and_saves_one_table():
    shared = model_of(*TRANSFORMER, "model.share_embeddings=true")
    apart = model_of(*TRANSFORMER)
    table = shared.decoder.embed.weight
    assert shared.encoder.embed.weight is table and shared.decoder.out.weight is table
    assert apart.encoder.embed.weight is not apart.decoder.embed.weight
    assert count_parameters(apart) - count_parameters(shared) == V * 16


def test_one_table_learns_from_both_sides():
    model = model_of(*TRANSFORMER, "model.share_embeddings=true", "model.encoder.dropout=0",
                     "model.decoder.dropout=0")
    src = torch.tensor([[7, 8, 3]])          # subword 7 is read by the encoder only
    tgt_in = torch.tensor([[2, 9, 10]])      # subword 9 by the decoder only
    out, _ = model(src, tgt_in)
    out.logits[..., 11].sum().backward()     # 11: neither side reads it, only the output layer scores it
    grad = model.encoder.embed.weight.grad   # (V, D), the one table's gradient
    assert grad is model.decoder.embed.weight.grad
    for row in (7, 9, 11):
        assert grad[row].abs().sum() > 0, row
    assert grad[20].abs().sum() == 0          # a subword no side touched


def test_rnn_shares_when_the_sizes_agree():
    model = model_of(*LSTM, "model.share_embeddings=true")
    assert model.encoder.embed.weight is model.decoder.embed.weight
    assert model.decoder.output.weight is not model.decoder.embed.weight   # lstm: tie_embeddings=false


@pytest.mark.parametrize("overrides, src_vocab, message", [
    (("model.decoder.embed_dim=12",), V, "encoder's is 16 and the decoder's 12"),
    ((), V + 1, f"source has {V + 1} subwords and the target {V}"),
])
def test_what_cannot_share_is_one_line(overrides, src_vocab, message):
    with pytest.raises(NmtError, match=message):
        model_of(*LSTM, *overrides, "model.share_embeddings=true", src_vocab=src_vocab)


def test_config_check_wants_a_joint_vocabulary():
    cfg = make_config("experiment=quickstart", "model.share_embeddings=true", "data.joint_vocab=false")
    with pytest.raises(NmtError, match="model.share_embeddings=true needs one vocabulary"):
        check_config(cfg)
    with pytest.raises(NmtError, match="model.share_embeddings"):
        check_config(make_config("experiment=quickstart", "model.share_embeddings=maybe"))


def test_a_checkpoint_keeps_the_tie(tmp_path, cache_dir):
    from nmt import Translator

    train(tmp_path, "experiment=quickstart", "model.share_embeddings=true", "trainer.max_steps=4",
          "trainer.val_every=2", "trainer.val_max_sentences=4", "trainer.heatmap_sentences=0",
          "trainer.average_last=2", "trainer.keep_last=2", cache_dir=cache_dir)
    for name in ("best.pt", "averaged.pt"):
        model = Translator.from_checkpoint(tmp_path / "checkpoints" / name, device="cpu").model
        assert model.encoder.embed.weight is model.decoder.embed.weight, name
