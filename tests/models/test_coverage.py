"""Coverage attention (Tu et al. 2016; See et al. 2017, Sec. 2.3) and its loss,
by hand on tiny numbers, in the RNN decoder's state, in greedy and beam
search, and through the CLI on the toy task."""

import pytest
import torch

from nmt.core.beam_search import beam_search
from nmt.core.greedy_search import greedy_search
from nmt.base.errors import NmtError
from nmt.core.attention.coverage import CoverageAttention
from nmt.models.build import build_model
from nmt.core.loss import coverage_loss
from tests.helpers import make_config, one_thread, run_cli, train  # noqa: F401 - one_thread: a fixture

pytestmark = pytest.mark.usefixtures("one_thread")
BOS, EOS = 2, 3
SMALL = ["model/encoder=gru", "model/decoder=gru", "model/attention=coverage",
         "model.encoder.embed_dim=16", "model.encoder.hidden_size=32", "model.decoder.embed_dim=16",
         "model.decoder.hidden_size=32", "model.attention.hidden_dim=8", "model.decoder.dropout=0.0",
         "model.encoder.dropout=0.0"]


def unit_attention(w_c: float) -> CoverageAttention:
    """One-dimensional everything: W = U = v = 1, w_c as given."""
    attention = CoverageAttention(query_dim=1, key_dim=1, hidden_dim=1)
    with torch.no_grad():
        for linear in (attention.w_a, attention.u_a, attention.v_a):
            linear.weight.fill_(1.0)
        attention.w_c.weight.fill_(w_c)
    return attention


def test_coverage_fed_score_by_hand():
    # s = 0, h = (0, 0, 0.5), c = (1, 0, 0), w_c = -1:
    #   e_i = tanh(s + h_i + w_c c_i) = (tanh(-1), tanh(0), tanh(0.5)) = (-0.7616, 0, 0.4621)
    #   exp(e) = (0.4670, 1, 1.5874), sum 3.0544 -> a = (0.1529, 0.3274, 0.5197)
    # without coverage (c = 0): e = (0, 0, 0.4621) -> a = (1, 1, 1.5874) / 3.5874
    #                                               = (0.2788, 0.2788, 0.4425)
    attention = unit_attention(-1.0)
    query = torch.zeros(1, 1, 1)                                       # (B, T, Dq)
    keys = torch.tensor([[[0.0], [0.0], [0.5]]])                       # (B, S, Dk)
    mask = torch.ones(1, 1, 3, dtype=torch.bool)
    prepared = attention.prepare(keys)
    covered = attention(query, prepared, keys, mask, coverage=torch.tensor([[[1.0, 0.0, 0.0]]]))
    assert covered.weights[0, 0].tolist() == pytest.approx([0.1529, 0.3274, 0.5197], abs=1e-4)
    plain = attention(query, prepared, keys, mask)                     # coverage None = zeros
    assert plain.weights[0, 0].tolist() == pytest.approx([0.2788, 0.2788, 0.4425], abs=1e-4)
    # the context is the weighted sum of the values: 0.5197 * 0.5 = 0.2599
    assert covered.context.item() == pytest.approx(0.5197 * 0.5, abs=1e-4)


def test_coverage_loss_by_hand():
    # a_1 = (0.5, 0.5), c_1 = (0, 0)      -> min sum 0
    # a_2 = (0.2, 0.8), c_2 = (0.5, 0.5)  -> min(0.2, 0.5) + min(0.8, 0.5) = 0.7
    # a_3 = (0.9, 0.1), c_3 = (0.7, 1.3)  -> 0.7 + 0.1 = 0.8, but label 3 is padding: not counted
    weights = torch.tensor([[[0.5, 0.5], [0.2, 0.8], [0.9, 0.1]]])
    coverage = torch.tensor([[[0.0, 0.0], [0.5, 0.5], [0.7, 1.3]]])
    labels = torch.tensor([[5, 3, 0]])
    assert coverage_loss(weights, coverage, labels, pad_id=0).item() == pytest.approx(0.7)
    assert coverage_loss(weights, coverage, torch.tensor([[5, 6, 3]]), 0).item() == pytest.approx(1.5)


def small_model(*overrides):
    torch.manual_seed(3)
    model = build_model(make_config(*SMALL, *overrides).model, 20, 20)
    return model.eval()


SRC = torch.tensor([[5, 6, 7, 8, 9], [10, 11, 12, 0, 0]])              # (B, S), the second padded


@pytest.mark.parametrize("style", ["bahdanau", "luong"])
def test_decoder_state_carries_the_running_sum(style):
    model = small_model(f"model.decoder.style={style}", "model.decoder.input_feeding=false")
    tgt_in = torch.tensor([[BOS, 4, 5, 6], [BOS, 7, 8, 0]])
    with torch.no_grad():
        out, _ = model(SRC, tgt_in)
    # c_1 = 0 and c_t = a_1 + ... + a_{t-1}
    expected = torch.cumsum(out.weights, 1) - out.weights                # (B, T, S)
    assert out.coverage.shape == out.weights.shape
    assert torch.allclose(out.coverage, expected, atol=1e-6)
    assert float(out.coverage[1, :, 3:].abs().max()) == 0.0             # padding never covered


def rescore(model, row, tokens):
    src = row[None, : int((row != 0).sum())]
    with torch.no_grad():
        out, _ = model(src, torch.tensor([[BOS] + tokens]))
    log_probs = out.logits[0].log_softmax(-1)                           # (T, V)
    return float(log_probs.gather(1, torch.tensor(tokens + [EOS])[:, None]).sum()), out.weights[0]


@pytest.mark.parametrize("style", ["bahdanau", "luong"])
def test_cached_search_with_coverage_equals_teacher_forcing(style):
    """Beam search reorders the coverage vector with the beams: every one of the
    n best, re-scored by teacher forcing, has the score and attention the search gave it."""
    model = small_model(f"model.decoder.style={style}")
    for row, hyp in zip(SRC, greedy_search(model, SRC, BOS, EOS, max_len_extra=4)):
        score, weights = rescore(model, row, hyp.tokens)
        assert score == pytest.approx(hyp.score, abs=1e-4)
        assert torch.allclose(weights, hyp.attention, atol=1e-5)
    beams = beam_search(model, SRC, BOS, EOS, beam_size=4, nbest=4, alpha=0.0, max_len_extra=4)
    for row, hyps in zip(SRC, beams):
        assert len({tuple(h.tokens) for h in hyps}) == 4
        for hyp in hyps:
            score, weights = rescore(model, row, hyp.tokens)
            assert score == pytest.approx(hyp.score, abs=1e-4)
            assert torch.allclose(weights, hyp.attention, atol=1e-5)


def test_a_transformer_decoder_refuses_coverage_attention():
    cfg = make_config("model/decoder=transformer", "model/bridge=zero", "model/attention=coverage")
    with pytest.raises(NmtError, match="model/attention=coverage works with RNN decoders only"):
        build_model(cfg.model, 20, 20)


@pytest.fixture(scope="module")
def coverage_checkpoint(tmp_path_factory, cache_dir):
    """A tiny GRU with coverage attention, trained briefly on the toy task with the
    coverage loss and validated by a beam with the coverage penalty."""
    run_dir = tmp_path_factory.mktemp("coverage_run")
    trainer = train(run_dir, "experiment=quickstart", *SMALL, "data.n_train=400",
                    "trainer.max_steps=30", "trainer.val_every=30", "trainer.val_max_sentences=8",
                    "trainer.val_beam_size=2", "trainer.coverage_penalty=0.2",
                    "trainer.heatmap_sentences=1", cache_dir=cache_dir)
    assert trainer.loss_weights.coverage == 0.1                          # the YAML's lambda
    return run_dir / "checkpoints" / "best.pt"


def test_the_coverage_loss_is_logged_to_tensorboard(coverage_checkpoint):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(coverage_checkpoint.parents[1] / "tensorboard"))
    events.Reload()
    values = [e.value for e in events.Scalars("train/coverage_loss")]
    # per target token, sum_i min(a_t,i, c_t,i) lies in [0, 1] (the a_t sum to 1)
    assert values and all(0 <= v <= 1 for v in values)


def test_coverage_trains_and_translates_through_the_cli(coverage_checkpoint):
    source = b"the first of may nineteen ten\nmonday the third of june two thousand\n"
    result = run_cli("nmt.translate", "--checkpoint", str(coverage_checkpoint), "--beam-size", "3",
                     "--coverage-penalty", "0.4", "--nbest", "2", input=source)
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 4 and lines[0].startswith("0 ||| ") and lines[2].startswith("1 ||| ")


def test_bad_coverage_penalty_is_one_line(coverage_checkpoint):
    result = run_cli("nmt.translate", "--checkpoint", str(coverage_checkpoint), "--coverage-penalty",
                     "-1", input=b"x\n")
    err = result.stderr.decode().strip()
    assert result.returncode == 1 and err == "nmt: error: --coverage-penalty -1.0 must be a finite number >= 0"


@pytest.mark.parametrize("beta, beam, message", [
    (float("nan"), 3, "coverage_penalty=nan must be a finite number >= 0"),
    (float("inf"), 3, "coverage_penalty=inf must be a finite number >= 0"),
    (0.5, 1, "coverage_penalty=0.5 re-ranks the beam's hypotheses; set beam_size to 2 or more"),
])
def test_translator_refuses_a_bad_coverage_penalty(coverage_checkpoint, beta, beam, message):
    from nmt.translator import Translator

    translator = Translator.from_checkpoint(coverage_checkpoint, device="cpu")
    with pytest.raises(NmtError, match=message):
        translator.translate(["the first of may nineteen ten"], beam_size=beam, coverage_penalty=beta)


def test_coverage_loss_weight_must_be_a_number(tmp_path, cache_dir):
    with pytest.raises(NmtError, match=r"model.attention.coverage_loss_weight=-1: must be >= 0"):
        train(tmp_path, "experiment=quickstart", *SMALL, "model.attention.coverage_loss_weight=-1",
              "data.n_train=50", cache_dir=cache_dir)


def test_the_explorer_shows_the_coverage_vector(coverage_checkpoint):
    import numpy as np

    from nmt.translator import Translator
    from nmt.viz.attention_data import translate_and_explain

    translator = Translator.from_checkpoint(coverage_checkpoint, device="cpu")
    result = translate_and_explain(translator, "monday the third of june two thousand", beam_size=3)
    maps = {m["name"]: m for m in result["maps"]}
    assert list(maps) == ["cross", "coverage"]
    cross = np.array(maps["cross"]["layers"][0][0])                     # (T, S)
    coverage = np.array(maps["coverage"]["layers"][0][0])
    assert coverage.shape == cross.shape == (len(result["tgt_pieces"]), len(result["src_pieces"]))
    # row t is c_t = a_1 + ... + a_(t-1): zero first, then the running sum of the attention rows
    assert np.allclose(coverage, np.cumsum(cross, 0) - cross, atol=1e-3)
    assert maps["coverage"]["value_name"] == "coverage" and "c_t" in maps["coverage"]["legend"]
