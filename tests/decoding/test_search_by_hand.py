"""Greedy and beam search on a model whose probabilities are a fixed table.

Paths (probabilities from fake_model.transition_table):
    a </s>     0.5 * 0.8       = 0.40   log = -0.916   (2 tokens with eos)
    b c </s>   0.4 * 0.9 * 1.0 = 0.36   log = -1.022   (3 tokens)
    </s>       0.1                      log = -2.303   (1 token)
"""

import math

import pytest
import torch

from nmt.core.beam_search import beam_search
from nmt.core.penalties import length_penalty
from nmt.core.greedy_search import greedy_search
from tests.decoding.fake_model import A, B, BOS, C, EOS, TableModel

SRC = torch.tensor([[5, 6, 7]])


def test_greedy_follows_the_most_likely_token():
    # bos -> a (0.5) -> eos (0.8)
    hyp = greedy_search(TableModel(), SRC, BOS, EOS)[0]
    assert hyp.tokens == [A]
    assert hyp.score == pytest.approx(math.log(0.4), abs=1e-5)
    assert hyp.attention.shape == (2, 3)


def test_beam_size_one_equals_greedy():
    greedy = greedy_search(TableModel(), SRC, BOS, EOS)[0]
    beam = beam_search(TableModel(), SRC, BOS, EOS, beam_size=1, alpha=0.0)[0][0]
    assert beam.tokens == greedy.tokens
    assert beam.score == pytest.approx(greedy.score, abs=1e-6)


def test_length_penalty_changes_the_choice_as_the_formula_says():
    # alpha = 0: -0.916 (a) beats -1.022 (b c).
    best = beam_search(TableModel(), SRC, BOS, EOS, beam_size=2, alpha=0.0)[0][0]
    assert best.tokens == [A]
    # alpha = 2: lp(2) = (7/6)^2 = 1.3611 -> -0.916 / 1.3611 = -0.673
    #            lp(3) = (8/6)^2 = 1.7778 -> -1.022 / 1.7778 = -0.575: b c wins.
    nbest = beam_search(TableModel(), SRC, BOS, EOS, beam_size=2, nbest=2, alpha=2.0)[0]
    assert [h.tokens for h in nbest] == [[B, C], [A]]
    assert nbest[0].score == pytest.approx(math.log(0.36) / (8 / 6) ** 2, abs=1e-4)
    assert nbest[1].score == pytest.approx(math.log(0.40) / (7 / 6) ** 2, abs=1e-4)


def test_length_penalty_formula():
    # ((5 + 3) / 6) ** 1 = 1.3333; alpha 0 gives 1
    assert length_penalty(torch.tensor([3]), 1.0).item() == pytest.approx(4 / 3)
    assert length_penalty(torch.tensor([3]), 0.0).item() == 1.0


def test_max_length_forces_an_end():
    # ratio 0, extra 1: one output step, which must be eos
    hyp = greedy_search(TableModel(), SRC, BOS, EOS, max_len_ratio=0.0, max_len_extra=1)[0]
    assert hyp.tokens == []
    beam = beam_search(TableModel(), SRC, BOS, EOS, beam_size=2, max_len_ratio=0.0,
                       max_len_extra=1)[0][0]
    assert beam.tokens == []


def test_batch_gives_each_sentence_its_own_result():
    src = torch.tensor([[5, 6, 7], [5, 0, 0]])
    hyps = beam_search(TableModel(), src, BOS, EOS, beam_size=2, nbest=2, alpha=2.0)
    assert [h.tokens for h in hyps[0]] == [[B, C], [A]]
    assert [h.tokens for h in hyps[1]] == [[B, C], [A]]
    assert hyps[1][0].attention.shape == (3, 1)   # only the real source token


def test_min_length_bars_eos_until_then_by_hand():
    from tests.decoding.fake_model import X
    # min_len 2: after a, eos (0.8) is barred, so x (0.2) follows, then eos (1.0):
    # a x </s> = 0.5 * 0.2 * 1.0 = 0.10; the scores are the model's own log-probabilities
    hyp = greedy_search(TableModel(), SRC, BOS, EOS, min_len=2)[0]
    assert hyp.tokens == [A, X]
    assert hyp.score == pytest.approx(math.log(0.10), abs=1e-5)
    # beam: the two-token paths are a x (0.10) and b c (0.36), b d (0.04) -> b c wins, a x second
    hyps = beam_search(TableModel(), SRC, BOS, EOS, beam_size=3, nbest=3, alpha=0.0, min_len=2)[0]
    assert [h.tokens for h in hyps][:2] == [[B, C], [A, X]]
    assert hyps[0].score == pytest.approx(math.log(0.36), abs=1e-5)
    # the length limit still wins over min_len: at most 1 output token plus eos
    short = greedy_search(TableModel(), SRC, BOS, EOS, max_len_ratio=0.0, max_len_extra=2, min_len=5)[0]
    assert short.tokens == [A]


def test_never_bars_tokens_and_keeps_the_models_scores():
    # with a barred: bos -> b (0.4) -> c (0.9) -> eos (1.0), score log 0.36 (no renormalising)
    hyp = greedy_search(TableModel(), SRC, BOS, EOS, never=(A,))[0]
    assert hyp.tokens == [B, C]
    assert hyp.score == pytest.approx(math.log(0.36), abs=1e-5)
    best = beam_search(TableModel(), SRC, BOS, EOS, beam_size=2, alpha=0.0, never=(A,))[0][0]
    assert best.tokens == [B, C] and best.score == pytest.approx(math.log(0.36), abs=1e-5)


def test_coverage_penalty_formula():
    from nmt.core.penalties import coverage_penalty
    # beta 0.5, coverage (1.6, 0.2, 0.5) with the last token padding:
    # 0.5 * (log min(1.6, 1) + log 0.2) = 0.5 * (0 - 1.6094) = -0.8047
    cov = torch.tensor([[1.6, 0.2, 0.5]])
    mask = torch.tensor([[True, True, False]])
    assert coverage_penalty(cov, mask, 0.5).item() == pytest.approx(0.5 * math.log(0.2), abs=1e-6)
    assert coverage_penalty(cov, mask, 0.0).item() == 0.0


def test_coverage_penalty_changes_the_choice_as_the_formula_says():
    from tests.decoding.fake_model import attention_table
    model = TableModel(attention_table())
    # Summed attention (fake_model.attention_table; eos steps count, they output eos):
    #   a </s>:   bos (0.8, 0.1, 0.1) + a (0.8, 0.1, 0.1)                 = (1.6, 0.2, 0.2)
    #             cp = beta * (log 1 + 2 log 0.2)  = beta * -3.2189
    #   b c </s>: bos (0.8, 0.1, 0.1) + b (0.05, 0.9, 0.05) + c (0.05, 0.05, 0.9)
    #                                                                     = (0.9, 1.05, 1.05)
    #             cp = beta * (log 0.9 + 0 + 0)    = beta * -0.1054
    # alpha 0: s(a) = -0.9163 + beta * -3.2189, s(b c) = -1.0217 + beta * -0.1054;
    # they tie at beta = (1.0217 - 0.9163) / (3.2189 - 0.1054) = 0.1054 / 3.1135 = 0.0339.
    tie = (math.log(0.40) - math.log(0.36)) / (math.log(0.9) - 2 * math.log(0.2))
    assert tie == pytest.approx(0.0339, abs=1e-4)
    for beta, winner in ((0.0, [A]), (0.033, [A]), (0.035, [B, C]), (0.2, [B, C])):
        best = beam_search(model, SRC, BOS, EOS, beam_size=2, alpha=0.0, beta=beta)[0][0]
        assert best.tokens == winner, beta
    nbest = beam_search(model, SRC, BOS, EOS, beam_size=2, nbest=2, alpha=0.0, beta=0.2)[0]
    assert [h.tokens for h in nbest] == [[B, C], [A]]
    assert nbest[0].score == pytest.approx(math.log(0.36) + 0.2 * math.log(0.9), abs=1e-4)
    assert nbest[1].score == pytest.approx(math.log(0.40) + 0.2 * 2 * math.log(0.2), abs=1e-4)
    # with the length penalty too (alpha 1): s = log P / ((5 + |Y|) / 6) + cp
    both = beam_search(model, SRC, BOS, EOS, beam_size=2, nbest=2, alpha=1.0, beta=0.2)[0]
    assert both[0].score == pytest.approx(math.log(0.36) / (8 / 6) + 0.2 * math.log(0.9), abs=1e-4)


def test_coverage_of_a_finished_hypothesis_stays_frozen():
    from tests.decoding.fake_model import attention_table
    # "a </s>" finishes at step 2 while "b c </s>" runs a third step; the eos
    # that carries "a </s>" on adds no attention, so its cp stays 0.2 * (2 log 0.2)
    # (were step 3's uniform (1/3, 1/3, 1/3) added, it would be 0.2 * 2 log(0.5333)).
    nbest = beam_search(TableModel(attention_table()), SRC, BOS, EOS, beam_size=2, nbest=2,
                        alpha=0.0, beta=0.2)[0]
    assert nbest[1].tokens == [A]
    assert nbest[1].score == pytest.approx(math.log(0.40) + 0.2 * 2 * math.log(0.2), abs=1e-5)
