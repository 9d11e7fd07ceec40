"""The beam search's tree (BeamRecorder) and forced prefixes, by hand and on real models.

Paths of fake_model's table (see test_search_by_hand):
    a </s>     log 0.40 = -0.916
    b c </s>   log 0.36 = -1.022
    </s>       log 0.10 = -2.303
    a x </s>   log 0.10 = -2.303
    b d </s>   log 0.04 = -3.219
"""

import math

import pytest
import torch

from nmt.core.beam_search import beam_search
from nmt.decoding.beam_tree import BeamRecorder
from nmt.core.greedy_search import greedy_search
from tests.decoding.fake_model import A, B, BOS, C, D, EOS, X, TableModel

SRC = torch.tensor([[5, 6, 7]])


def by_step(recorder):
    """step -> {(token, state): summed log P}"""
    steps = {}
    for n in recorder.nodes:
        steps.setdefault(n.step, {})[(n.token, n.state)] = n.score
    return steps


def test_the_tree_of_a_two_beam_search_by_hand():
    recorder = BeamRecorder(pruned=1)
    hyps = beam_search(TableModel(), SRC, BOS, EOS, beam_size=2, nbest=2, alpha=0.0, recorder=recorder)[0]
    steps = by_step(recorder)
    log = math.log
    # step 1 from <s>: a (0.5) and b (0.4) kept, </s> (0.1) the best pruned
    assert steps[1] == pytest.approx({(A, "kept"): log(0.5), (B, "kept"): log(0.4), (EOS, "pruned"): log(0.1)},
                                     abs=1e-5)
    # step 2: a </s> (0.40) ends, b c (0.36) kept; a x (0.10) the best pruned (b d is 0.04)
    assert steps[2] == pytest.approx({(EOS, "finished"): log(0.4), (C, "kept"): log(0.36),
                                      (X, "pruned"): log(0.1)}, abs=1e-5)
    # step 3: b c </s> ends; a </s> is carried over, not a new node
    assert (EOS, "finished") in steps[3] and steps[3][EOS, "finished"] == pytest.approx(log(0.36), abs=1e-5)
    assert [k for k in steps[3] if k[1] != "pruned"] == [(EOS, "finished")]
    # the finals: ranked as the search ranks them, alpha 0: lp 1, cp 0
    finals = sorted(recorder.finals, key=lambda f: f.rank)
    assert [(f.length, f.length_penalty, f.coverage_penalty) for f in finals] == [(2, 1.0, 0.0), (3, 1.0, 0.0)]
    assert [f.score for f in finals] == [h.score for h in hyps]
    # each final's node is the path of its hypothesis
    nodes = {n.id: n for n in recorder.nodes}

    def path(node):
        tokens = []
        while nodes[node].parent is not None:
            tokens.append(nodes[node].token)
            node = nodes[node].parent
        return tokens[::-1]

    assert [path(f.node) for f in finals] == [[A, EOS], [B, C, EOS]]
    # a node's attention is the row of the step that chose it: step 2 after b is b's row
    c_node = next(n for n in recorder.nodes if n.token == C)
    assert c_node.attention == pytest.approx([1 / 3] * 3, abs=1e-4)


def test_recording_changes_nothing(toy_checkpoint):
    from nmt.translator import Translator

    translator = Translator.from_checkpoint(toy_checkpoint, device="cpu")
    sentences = ["monday the first of may", "the third of june two thousand and five", "friday"]
    src, _, _ = translator._encode(sentences)
    for beta in (0.0, 0.4):
        plain = beam_search(translator.model, src, BOS, EOS, beam_size=4, nbest=4, beta=beta, never=(0, BOS))
        recorder = BeamRecorder()
        recorded = beam_search(translator.model, src, BOS, EOS, beam_size=4, nbest=4, beta=beta, never=(0, BOS),
                               recorder=recorder)
        for ours, theirs in zip(plain, recorded):
            for a, b in zip(ours, theirs):
                assert a.tokens == b.tokens and a.score == b.score and torch.equal(a.attention, b.attention)
        # the finals' scores are the search's, for every sentence of the batch
        for b, hyps in enumerate(plain):
            finals = sorted((f for f in recorder.finals if f.sentence == b), key=lambda f: f.rank)
            assert [f.score for f in finals] == [h.score for h in hyps]


def test_a_forced_prefix_is_output_at_its_own_log_probability():
    # force b: greedy goes on with b's most likely c, then </s>: 0.4 * 0.9 * 1.0
    hyp = greedy_search(TableModel(), SRC, BOS, EOS, prefix=[B])[0]
    assert hyp.tokens == [B, C] and hyp.score == pytest.approx(math.log(0.36), abs=1e-5)
    # force b d: 0.4 * 0.1 * 1.0, though b c is likelier
    best = beam_search(TableModel(), SRC, BOS, EOS, beam_size=2, alpha=0.0, prefix=[B, D])[0][0]
    assert best.tokens == [B, D] and best.score == pytest.approx(math.log(0.04), abs=1e-5)
