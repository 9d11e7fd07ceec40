"""The core's search pieces checked by hand: the length limit, Wu et al.'s
length and coverage penalties, and a two-step beam whose paths are all
enumerated below, on a model whose next-token probabilities are a table."""

import ast
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from nmt.core.beam_search import beam_search
from nmt.core.greedy_search import greedy_search
from nmt.core.length_limit import MAX_LEN_EXTRA, MAX_LEN_RATIO, max_output_length
from nmt.core.outputs import Memory
from nmt.core.penalties import COVERAGE_FLOOR, coverage_penalty, length_penalty

CORE = Path(__file__).resolve().parents[2] / "nmt" / "core"
PAD, BOS, EOS, A, B, X = range(6)


def test_the_length_limit_by_hand():
    # S = 1, 4, 7 with 1.5 and 10: int(1.5) + 10 = 11, int(6.0) + 10 = 16, int(10.5) + 10 = 20
    src_len = torch.tensor([1, 4, 7])
    assert (MAX_LEN_RATIO, MAX_LEN_EXTRA) == (1.5, 10)
    assert max_output_length(src_len).tolist() == [11, 16, 20]
    assert max_output_length(src_len, cap=12).tolist() == [11, 12, 12]     # a position table of 12
    assert max_output_length(src_len, 0.5, 0).tolist() == [0, 2, 3]         # int(0.5), int(2.0), int(3.5)


def test_the_length_penalty_by_hand():
    # lp = ((5 + |Y|) / 6) ** alpha: |Y| = 7 -> 12 / 6 = 2; |Y| = 1 -> 1 whatever alpha; |Y| = 19 -> 4 ** 0.5 = 2
    lengths = torch.tensor([1, 7, 19])
    assert length_penalty(lengths, 1.0).tolist() == [1.0, 2.0, 4.0]
    assert length_penalty(lengths, 0.5).tolist() == [1.0, pytest.approx(math.sqrt(2)), 2.0]
    assert length_penalty(lengths, 0.0).tolist() == [1.0, 1.0, 1.0]        # alpha 0: off
    assert length_penalty(lengths, 1.0).dtype == torch.float32
    # the same formula on numpy, as the CTranslate2 route ranks (float64 there)
    on_numpy = length_penalty(np.array([1, 7, 19]), 1.0)
    assert on_numpy.dtype == np.float64 and on_numpy.tolist() == [1.0, 2.0, 4.0]


def test_the_coverage_penalty_by_hand():
    coverage = torch.tensor([[0.5, 2.0, 0.0], [1.0, 1.0, 0.25]])       # (N=2, S=3)
    mask = torch.tensor([[True, True, True], [True, True, False]])      # the second's last token is padding
    # row 0: 0.2 * (log 0.5 + log min(2, 1) + log 1e-9) = 0.2 * (-0.6931 + 0 - 20.7233) = -4.2833
    # row 1: 0.2 * (log 1 + log 1), the 0.25 is padding and not counted        = 0
    cp = coverage_penalty(coverage, mask, 0.2)
    assert cp.tolist() == [pytest.approx(-4.2833, abs=1e-4), 0.0]
    assert COVERAGE_FLOOR == 1e-9
    assert coverage_penalty(coverage, mask, 0.0).tolist() == [0.0, 0.0]  # beta 0: off


class MarkovModel:
    """A model whose next-token probabilities depend on the last token only:

        after <s>:  a 0.6   b 0.4
        after a:    </s> 0.55   x 0.45
        after b:    </s> 0.9    x 0.1
        after x:    </s> 1.0
    """

    def __init__(self):
        table = torch.full((6, 6), 1e-12)
        table[BOS, A], table[BOS, B] = 0.6, 0.4
        table[A, EOS], table[A, X] = 0.55, 0.45
        table[B, EOS], table[B, X] = 0.9, 0.1
        table[X, EOS] = table[EOS, EOS] = table[PAD, EOS] = 1.0
        self.log_table = (table / table.sum(-1, keepdim=True)).log()         # (V, V)
        self.decoder = self

    def start(self, src):
        memory = Memory(torch.zeros(src.size(0), src.size(1), 1), (src != PAD)[:, None, :])
        return memory, torch.zeros(src.size(0))

    def step(self, y_prev, state, memory):
        real = memory.mask[:, 0].float()                                    # (n, S), uniform attention
        return self.log_table[y_prev], state, real / real.sum(-1, keepdim=True)

    def reorder_state(self, state, index):
        return state.index_select(0, index)


SRC = torch.tensor([[7, 8, 9]])


def test_a_two_step_beam_by_hand_finds_what_greedy_misses():
    # Every path:  a </s> 0.6 * 0.55 = 0.33   a x </s> 0.6 * 0.45 = 0.27
    #              b </s> 0.4 * 0.9  = 0.36   b x </s> 0.4 * 0.1  = 0.04
    # Greedy takes a (0.6 > 0.4), then </s> (0.55 > 0.45): a </s>, log 0.33.
    greedy = greedy_search(MarkovModel(), SRC, BOS, EOS)[0]
    assert greedy.tokens == [A] and greedy.score == pytest.approx(math.log(0.33), abs=1e-5)
    # A beam of 2 keeps a and b after step 1; of step 2's four candidates it keeps
    # b </s> (0.36) and a </s> (0.33): both ended, the search stops there.
    # alpha = 0 ranks by log P: b </s> first.
    nbest = beam_search(MarkovModel(), SRC, BOS, EOS, beam_size=2, nbest=2, alpha=0.0)[0]
    assert [h.tokens for h in nbest] == [[B], [A]]
    assert [h.score for h in nbest] == [pytest.approx(math.log(0.36), abs=1e-5),
                                        pytest.approx(math.log(0.33), abs=1e-5)]
    # alpha = 1: both have |Y| = 2, lp = 7 / 6, so the order stays and each score is log P * 6 / 7
    scaled = beam_search(MarkovModel(), SRC, BOS, EOS, beam_size=2, nbest=2, alpha=1.0)[0]
    assert scaled[0].tokens == [B] and scaled[0].score == pytest.approx(math.log(0.36) * 6 / 7, abs=1e-5)
    # a beam of 1 is greedy
    one = beam_search(MarkovModel(), SRC, BOS, EOS, beam_size=1, alpha=0.0)[0][0]
    assert one.tokens == greedy.tokens and one.score == pytest.approx(greedy.score, abs=1e-6)


def test_a_beam_of_3_at_the_length_limit_by_hand():
    # max_len_ratio 0, extra 2: limit(S) = int(0 * 3) + 2 = 2 output tokens with </s>, so step 2 may output
    # </s> only. Step 1 keeps a (0.6), b (0.4) and a third at 1e-12; step 2 gives a </s> 0.33 and
    # b </s> 0.36, and a x (0.27, far above the third) is never a candidate: </s> is forced at the limit.
    hyps = beam_search(MarkovModel(), SRC, BOS, EOS, beam_size=3, nbest=2, alpha=0.0,
                       max_len_ratio=0.0, max_len_extra=2)[0]
    assert [h.tokens for h in hyps] == [[B], [A]]
    assert hyps[0].score == pytest.approx(math.log(0.36), abs=1e-5)


@pytest.mark.parametrize("file", ["penalties.py", "length_limit.py"])
def test_the_penalties_and_the_limit_import_nothing(file):
    """So the CTranslate2 route (nmt/deploy/engine.py), which never loads torch,
    uses the core's definitions instead of a copy."""
    tree = ast.parse((CORE / file).read_text(encoding="utf-8"))
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
