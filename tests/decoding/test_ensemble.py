"""Ensemble decoding: the mean of the models' probabilities, by hand, and as
`python -m nmt.translate --checkpoint A B` runs it."""

import math

import pytest
import torch

from nmt.data.tokenizer import Tokenizer
from nmt.data.toy import make_toy_corpus
from nmt.core.beam_search import beam_search
from nmt.decoding.ensemble import Ensemble
from nmt.core.greedy_search import greedy_search
from nmt.commands.translate import main
from nmt.translator import Translator
from tests.decoding.fake_model import BOS, EOS, A, B, C, D, TableModel, transition_table
from tests.helpers import one_thread  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("one_thread")


class OtherTableModel(TableModel):
    """Prefers B first (0.7), and after B prefers D (0.8)."""

    def __init__(self):
        super().__init__()
        table = transition_table()
        table[BOS] = 1e-9
        table[BOS, A], table[BOS, B], table[BOS, EOS] = 0.2, 0.7, 0.1
        table[B] = 1e-9
        table[B, C], table[B, D] = 0.2, 0.8
        self.decoder.log_table = (table / table.sum(-1, keepdim=True)).log()


SRC = torch.tensor([[5, 6, 7]])


def test_each_model_alone_and_the_ensemble_by_hand():
    # alone: model 1 says A (0.5) then eos (0.8); model 2 says B (0.7) then D (0.8)
    assert greedy_search(TableModel(), SRC, BOS, EOS)[0].tokens == [A]
    assert greedy_search(OtherTableModel(), SRC, BOS, EOS)[0].tokens == [B, D]
    # together, after bos: A (0.5+0.2)/2 = 0.35, B (0.4+0.7)/2 = 0.55, eos 0.1 -> B;
    # after B: C (0.9+0.2)/2 = 0.55, D (0.1+0.8)/2 = 0.45 -> C; after C both give eos 1.0
    hyp = greedy_search(Ensemble([TableModel(), OtherTableModel()]), SRC, BOS, EOS)[0]
    assert hyp.tokens == [B, C]
    assert hyp.score == pytest.approx(2 * math.log(0.55), abs=1e-5)


def test_beam_search_runs_on_the_ensemble_by_hand():
    # whole paths under the mean: B C eos = .55 * .55 = .3025; B D eos = .55 * .45 = .2475;
    # A eos = .35 * .8 = .28 (both models give eos 0.8 after A); A X eos = .35 * .2 = .07
    hyps = beam_search(Ensemble([TableModel(), OtherTableModel()]), SRC, BOS, EOS,
                       beam_size=3, nbest=3, alpha=0.0)[0]
    assert [h.tokens for h in hyps] == [[B, C], [A], [B, D]]
    assert [h.score for h in hyps] == pytest.approx(
        [math.log(0.3025), math.log(0.28), math.log(0.2475)], abs=1e-5)


def test_an_ensemble_of_one_model_twice_is_that_model(toy_checkpoint):
    single = Translator.from_checkpoint(toy_checkpoint, device="cpu")
    double = Translator.from_checkpoints([toy_checkpoint, toy_checkpoint], device="cpu")
    sources = [src for src, _ in make_toy_corpus(1, 6, 0, seed=5).valid]
    for beam in (1, 4):
        alone = single.translate(sources, beam_size=beam)
        together = double.translate(sources, beam_size=beam)
        assert [o.text for o in together] == [o.text for o in alone]
        assert [o.score for o in together] == pytest.approx([o.score for o in alone], abs=1e-4)
        for a, b in zip(alone, together):
            assert a.attention == pytest.approx(b.attention, abs=1e-5)


def test_cli_ensemble_with_heatmaps_and_html(tmp_path, toy_checkpoint, capsys):
    source = tmp_path / "in.txt"
    source.write_text("".join(s + "\n" for s, _ in make_toy_corpus(1, 2, 0, seed=6).valid),
                      encoding="utf-8")
    out, html = tmp_path / "out.txt", tmp_path / "a.html"
    assert main(["--checkpoint", str(toy_checkpoint), str(toy_checkpoint), "--input", str(source),
                 "--output", str(out), "--plot-attention", str(tmp_path / "maps"),
                 "--attention-html", str(html)]) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2
    assert sorted(p.name for p in (tmp_path / "maps").iterdir()) == ["00001.png", "00002.png"]
    page = html.read_text(encoding="utf-8")
    assert page.count("(in an ensemble of 2)") == 2          # one column of maps per model


def test_cli_ensemble_refuses_one_models_layers(tmp_path, toy_checkpoint, capsys):
    assert main(["--checkpoint", str(toy_checkpoint), str(toy_checkpoint), "--attention-layer", "1",
                 "--plot-attention", str(tmp_path / "maps")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("nmt: error:") and "give one --checkpoint" in err and "\n" not in err


def test_checkpoints_of_different_vocabularies_are_refused(tmp_path, toy_checkpoint, capsys):
    state = torch.load(toy_checkpoint, weights_only=True)
    ours = Tokenizer.from_bytes(state["tokenizer"])
    pairs = make_toy_corpus(300, 1, 0, seed=9).train
    other = Tokenizer.train(pairs, ours.src_vocab_size, model_type="bpe")
    assert other.to_bytes() != ours.to_bytes() and other.src_vocab_size == ours.src_vocab_size
    state["tokenizer"] = other.to_bytes()
    foreign = tmp_path / "foreign.pt"
    torch.save(state, foreign)
    source = tmp_path / "in.txt"
    source.write_text("one two\n", encoding="utf-8")
    assert main(["--checkpoint", str(toy_checkpoint), str(foreign), "--input", str(source)]) == 1
    err = capsys.readouterr().err.strip()
    assert "use different vocabularies" in err and str(foreign) in err and "\n" not in err


def test_the_coverage_penalty_of_an_ensemble_uses_the_mean_attention_by_hand():
    from tests.decoding.fake_model import attention_table
    # Both members have the same probabilities (a </s> 0.40, b c </s> 0.36); one attends
    # as fake_model.attention_table, the other uniformly (1/3 each), so the ensemble's
    # attention is their mean: bos and a (0.5667, 0.2167, 0.2167), b (0.1917, 0.6167, 0.1917),
    # c (0.1917, 0.1917, 0.6167). Summed over each path:
    #   a </s>:   (1.1333, 0.4333, 0.4333)  cp = beta * 2 log 0.4333 = beta * -1.6725
    #   b c </s>: (0.95, 1.025, 1.025)      cp = beta * log 0.95     = beta * -0.0513
    # tie at beta = (log 0.40 - log 0.36) / (1.6725 - 0.0513) = 0.1054 / 1.6212 = 0.0650
    # (one member alone, with attention_table, ties at 0.0339: test_search_by_hand)
    ensemble = Ensemble([TableModel(attention_table()), TableModel()])
    for beta, winner in ((0.0, [A]), (0.06, [A]), (0.07, [B, C])):
        best = beam_search(ensemble, SRC, BOS, EOS, beam_size=2, alpha=0.0, beta=beta)[0][0]
        assert best.tokens == winner, beta
    best = beam_search(ensemble, SRC, BOS, EOS, beam_size=2, alpha=0.0, beta=0.07)[0][0]
    assert best.score == pytest.approx(math.log(0.36) + 0.07 * math.log(0.95), abs=1e-5)
