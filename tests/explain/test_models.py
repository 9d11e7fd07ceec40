"""nmt.explain on real models: nmt's GRU (the toy quickstart) and Transformer,
and a tiny Hugging Face Marian; each checked against a computation that does
not go through nmt.explain's own code path."""

import numpy as np
import pytest
import torch

from nmt.base.errors import NmtError
from nmt.explain import METHODS, alternatives, explain
from nmt.explain.models import model_of
from nmt.explain.rollout import rollout
from nmt.translator import Translator
from tests.helpers import one_thread  # noqa: F401 - a fixture
from tests.test_explore import transformer_checkpoint  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("one_thread")
DATE = "monday the twenty first of march nineteen eighty four"


@pytest.fixture(scope="module")
def gru(toy_checkpoint):
    return Translator.from_checkpoint(toy_checkpoint, device="cpu")


@pytest.fixture(scope="module")
def transformer(transformer_checkpoint):  # noqa: F811
    return Translator.from_checkpoint(transformer_checkpoint, device="cpu")


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    pytest.importorskip("transformers", reason="the hf extra is not installed")
    from nmt.hf.translator import HFTranslator
    from tests.hf_marian import build_tiny_marian

    return HFTranslator(str(build_tiny_marian(tmp_path_factory.mktemp("marian"))), device="cpu")


def saliency_by_autograd(run, embeddings: torch.Tensor, targets: torch.Tensor) -> np.ndarray:
    """|| d log p(targets[t]) / d e ||, one backward pass per target token, from
    run(e) -> logits (1, T, V): the plain loop nmt.explain batches."""
    rows = []
    for t in range(len(targets)):
        e = embeddings.detach().clone().requires_grad_()
        logp = run(e)[0, t].float().log_softmax(-1)[targets[t]]
        (grad,) = torch.autograd.grad(logp, e)
        rows.append(grad[0].norm(dim=-1))
    return torch.stack(rows).numpy()                                 # (T, S)


def test_nmt_saliency_equals_a_backward_pass_per_token(gru):
    out = gru.translate([DATE])[0]
    adapter = model_of(gru)
    pair = adapter.pair(DATE, out.tokens)
    layer = adapter.embedding()

    def run(e):
        handle = layer.register_forward_hook(lambda module, args, output: e)
        try:
            return gru.model(pair.src, pair.tgt_in)[0].logits
        finally:
            handle.remove()

    expected = saliency_by_autograd(run, layer(pair.src), pair.targets)
    result = explain(gru, DATE, out.tokens, "saliency")
    assert result.scores.shape == (1, 1, len(out.tgt_pieces), len(out.src_pieces))
    np.testing.assert_allclose(result.scores[0, 0], expected, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(result.shown.sum(-1), 1.0, rtol=1e-5)


def test_hf_saliency_equals_autograd_through_inputs_embeds(marian):
    out = marian.translate(["a b c d"])[0]
    adapter = model_of(marian)
    pair = adapter.pair("a b c d", out.tokens)
    encoder = marian.hf_model.get_encoder()

    def run(e):                       # Marian's encoder scales what embed_tokens gives
        return marian.hf_model(inputs_embeds=e * encoder.embed_scale, decoder_input_ids=pair.tgt_in).logits

    expected = saliency_by_autograd(run, encoder.embed_tokens(pair.src), pair.targets)
    result = explain(marian, "a b c d", out.tokens, "saliency")
    np.testing.assert_allclose(result.scores[0, 0], expected, rtol=1e-4, atol=1e-7)


def test_every_method_on_marian_has_the_translations_rows_and_columns(marian):
    out = marian.translate(["a b c d"])[0]
    for method in METHODS:
        result = explain(marian, "a b c d", out.tokens, method)
        L = 2 if method == "value-norm" else 1                      # the tiny Marian's 2 decoder layers
        assert result.scores.shape == (L, 1, len(out.tgt_pieces), len(out.src_pieces)), method
        assert np.isfinite(result.scores).all() and (result.scores >= 0).all(), method


def test_rollout_reads_the_attention_the_views_show(transformer):  # noqa: F811
    """Rolled out from the maps nmt.viz.attention_data gives the pages (4 decimals), the
    rollout is nmt.explain's; its rows are a share of the state (above 0, below 1)."""
    from nmt.viz.attention_data import attention_maps

    out = transformer.translate([DATE])[0]
    maps = {m["name"]: torch.tensor(m["layers"]) for m in attention_maps(transformer, DATE, out)}
    expected = rollout(maps["encoder-self"], maps["decoder-self"], maps["cross"])
    result = explain(transformer, DATE, out.tokens, "rollout")
    np.testing.assert_allclose(result.scores[0, 0], expected.numpy(), atol=2e-3)
    totals = result.scores[0, 0].sum(-1)
    assert (totals > 0).all() and (totals < 1).all()


def test_value_norm_uses_the_models_own_value_projection(transformer):  # noqa: F811
    out = transformer.translate([DATE])[0]
    adapter = model_of(transformer)
    pair = adapter.pair(DATE, out.tokens)
    attentions = adapter.attentions(pair)
    block = transformer.model.decoder.layers[-1].cross_attn
    with torch.no_grad():
        _, v = block.keys_values(attentions.memory[None])           # (1, H, S, Dh): the model's own code
        H, Dh = v.shape[1], v.shape[3]
        w_o = block.w_o.weight                                      # (D, D)
        moved = sum(torch.einsum("ts,sd->tsd", attentions.cross[-1, h], v[0, h] @ w_o[:, h * Dh:(h + 1) * Dh].T)
                    for h in range(H))                              # (T, S, D)
    result = explain(transformer, DATE, out.tokens, "value-norm")
    np.testing.assert_allclose(result.scores[-1, 0], moved.norm(dim=-1).numpy(), rtol=1e-4, atol=1e-6)


def test_rollout_of_an_rnn_decoder_and_an_ensemble_are_one_line(gru, toy_checkpoint):
    out = gru.translate([DATE])[0]
    with pytest.raises(NmtError, match="rollout follows a Transformer decoder"):
        explain(gru, DATE, out.tokens, "rollout")
    pair = Translator.from_checkpoints([toy_checkpoint, toy_checkpoint], device="cpu")
    with pytest.raises(NmtError, match="an ensemble of 2: give one --checkpoint"):
        explain(pair, DATE, out.tokens, "saliency")
    # top-k of an ensemble of one model twice: that model's own probabilities
    np.testing.assert_allclose([r["p"] for r in alternatives(pair, DATE, out.tokens, 3)],
                               [r["p"] for r in alternatives(gru, DATE, out.tokens, 3)], rtol=1e-5)


def test_greedy_chooses_the_most_probable_alternative(gru):
    out = gru.translate([DATE])[0]
    rows = alternatives(gru, DATE, out.tokens, 4)
    assert len(rows) == len(out.tgt_pieces)
    assert all(r["chosen_rank"] == 1 and r["ids"][0] == token for r, token in zip(rows, out.tokens + [3]))
    assert all(r["p"] == sorted(r["p"], reverse=True) and 0 < sum(r["p"]) <= 1 + 1e-6 for r in rows)
    # the probabilities are the model's: exp of its teacher-forced log-softmax
    adapter = model_of(gru)
    pair = adapter.pair(DATE, out.tokens)
    with torch.no_grad():
        probs = adapter.logits(pair.src, pair.tgt_in)[0].softmax(-1)
    assert rows[0]["p"][0] == pytest.approx(float(probs[0].max()), rel=1e-5)
