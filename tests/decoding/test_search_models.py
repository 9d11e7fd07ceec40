"""Greedy and beam search on real trained toy models, an RNN and a Transformer.

What the hand-made table model cannot show: the decoders' incremental state
(an RNN's hidden state, a Transformer's cached keys and values) gives the same
log-probabilities as the teacher-forced forward pass over the whole output,
beam size 1 is greedy, and a sentence's result does not depend on the other
sentences (and their padding) in its batch.
"""

import pytest
import torch

from nmt.data.toy import make_toy_corpus
from nmt.core.beam_search import beam_search
from nmt.core.greedy_search import greedy_search
from nmt.translator import Translator
from tests.helpers import one_thread, train  # noqa: F401 - one_thread: a fixture

pytestmark = pytest.mark.usefixtures("one_thread")

BOS, EOS = 2, 3
# Validation-like toy sources of different lengths, so a batch has padding.
SOURCES = [src for src, _ in make_toy_corpus(1, 3, 0, seed=11).valid]
SOURCES += ["monday the first of may", "friday the twenty third of december two thousand and nineteen"]
TINY = [f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
        for key, value in (("d_model", 32), ("layers", 1), ("heads", 2), ("ff_size", 64), ("dropout", 0.0))]


@pytest.fixture(scope="session")
def transformer_checkpoint(tmp_path_factory, cache_dir):
    """A tiny Transformer (one layer each side) trained briefly on the toy task."""
    run_dir = tmp_path_factory.mktemp("toy_transformer")
    train(run_dir, "data=toy", "model/encoder=transformer", "model/decoder=transformer",
          "model/bridge=zero", "model/positional=sinusoidal", "optimizer.lr=0.003", *TINY,
          "trainer.max_steps=40", "trainer.val_every=40", "trainer.val_max_sentences=10",
          "trainer.heatmap_sentences=0", "trainer.keep_last=0", cache_dir=cache_dir)
    return run_dir / "checkpoints" / "best.pt"


@pytest.fixture(params=["rnn", "transformer"])
def translator(request, toy_checkpoint):
    path = toy_checkpoint if request.param == "rnn" else request.getfixturevalue("transformer_checkpoint")
    return Translator.from_checkpoint(path, device="cpu")


def encode(translator, sentences=SOURCES):
    src, _, _ = translator._encode(sentences)
    return src                                                       # (B, S)


def rescore(model, src_row, tokens):
    """Teacher-forced pass over <s> tokens: per-position log-probs (T, V), weights (T, S)."""
    src = src_row[None, : int((src_row != 0).sum())]                  # (1, S) without padding
    tgt_in = torch.tensor([[BOS] + tokens])                           # (1, T)
    with torch.no_grad():
        out, _ = model(src, tgt_in, need_weights=True)
    return out.logits[0].float().log_softmax(-1), out.weights[0].float()


def test_the_decoders_under_test(translator):
    # the RNN toy checkpoint has a GRU decoder; the other a Transformer decoder (from_checkpoint's
    # KeptCacheDecoder: the core's TransformerDecoder with its step's cache written in place)
    assert type(translator.model.decoder).__name__ in ("RNNDecoder", "KeptCacheDecoder")


def test_beam_size_one_equals_greedy(translator):
    src = encode(translator)
    greedy = greedy_search(translator.model, src, BOS, EOS)
    beam = beam_search(translator.model, src, BOS, EOS, beam_size=1, alpha=0.0)
    for g, (b,) in zip(greedy, beam):
        assert b.tokens == g.tokens
        assert b.score == pytest.approx(g.score, abs=1e-4)
        assert torch.allclose(b.attention, g.attention, atol=1e-5)


def test_greedy_steps_match_the_teacher_forced_pass(translator):
    """Cached step-by-step decoding and the uncached forward pass agree on
    every choice, the summed log-probability and the attention."""
    model = translator.model
    src = encode(translator)
    for row, hyp in zip(src, greedy_search(model, src, BOS, EOS)):
        log_probs, weights = rescore(model, row, hyp.tokens)          # (T, V), (T, S)
        targets = torch.tensor(hyp.tokens + [EOS])
        # every token greedy chose is the argmax of the uncached pass (eos may be forced at the limit)
        assert log_probs[:-1].argmax(-1).tolist() == hyp.tokens
        assert float(log_probs.gather(1, targets[:, None]).sum()) == pytest.approx(hyp.score, abs=1e-3)
        assert torch.allclose(weights, hyp.attention, atol=1e-4)


def test_beam_scores_match_the_teacher_forced_pass(translator):
    """Each of the n best, re-scored without the cache, has the score beam search gave it
    (alpha = 0: the plain sum of log-probabilities)."""
    model = translator.model
    src = encode(translator)
    for row, hyps in zip(src, beam_search(model, src, BOS, EOS, beam_size=3, nbest=3, alpha=0.0)):
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        for hyp in hyps:
            log_probs, weights = rescore(model, row, hyp.tokens)
            targets = torch.tensor(hyp.tokens + [EOS])
            assert float(log_probs.gather(1, targets[:, None]).sum()) == pytest.approx(hyp.score, abs=1e-3)
            assert torch.allclose(weights, hyp.attention, atol=1e-4)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_batch_equals_each_sentence_alone(translator, beam_size):
    nbest = min(2, beam_size)
    together = translator.translate(SOURCES, beam_size=beam_size, nbest=nbest, batch_size=64)
    for sentence, batched in zip(SOURCES, together):
        (alone,) = translator.translate([sentence], beam_size=beam_size, nbest=nbest)
        assert batched.text == alone.text and batched.tokens == alone.tokens
        assert batched.score == pytest.approx(alone.score, abs=1e-4)
        assert [t for t, _ in batched.nbest] == [t for t, _ in alone.nbest]
        assert batched.attention.shape == alone.attention.shape
        assert abs(batched.attention - alone.attention).max() < 1e-4


def test_coverage_penalty_adds_the_formula_to_each_hypothesis(translator):
    """Wu et al.'s cp on real models: each of the n best scores its teacher-forced
    log-probability plus beta * sum_i log(min(sum_t a_t,i, 1)) of the attention it
    reports (a Transformer's: the last layer's cross-attention, mean over heads), with
    min(., 1) floored at 1e-9 (a trained model leaves "the" and "of" all but unread)."""
    model, beta = translator.model, 0.5
    src = encode(translator)
    for row, hyps in zip(src, beam_search(model, src, BOS, EOS, beam_size=3, nbest=3, alpha=0.0,
                                          beta=beta)):
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        for hyp in hyps:
            log_probs, weights = rescore(model, row, hyp.tokens)                # (T, V), (T, S)
            targets = torch.tensor(hyp.tokens + [EOS])
            cp = beta * float(weights.sum(0).clamp(min=1e-9, max=1.0).log().sum())
            assert float(log_probs.gather(1, targets[:, None]).sum()) + cp == pytest.approx(hyp.score, abs=1e-3)
