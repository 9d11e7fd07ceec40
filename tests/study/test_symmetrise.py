"""grow-diag-final-and by hand, and eflomal's links on a small local corpus (with the [study] extra)."""

import time

import pytest

from nmt_study.symmetrise import grow_diag_final_and


def test_grow_diag_final_and_by_hand():
    # 4 x 4 words. forward {(0,0), (1,1), (3,1)}, reverse {(0,0), (1,1), (2,3)}
    # intersection {(0,0), (1,1)}; union adds (3,1) and (2,3), neither a neighbour of
    # the intersection, so grow-diag adds nothing.
    # final-and(forward): (3,1) has target 1 aligned already -> not added ("and": both unaligned)
    # final-and(reverse): (2,3): source 2 and target 3 both unaligned -> added
    forward, reverse = {(0, 0), (1, 1), (3, 1)}, {(0, 0), (1, 1), (2, 3)}
    assert grow_diag_final_and(forward, reverse, 4, 4) == {(0, 0), (1, 1), (2, 3)}
    # (the union, which NLTK 3.10's gdfa returns, would also hold (3,1))


def test_grow_diag_adds_neighbours_with_one_side_unaligned():
    # intersection {(0,0)}; (1,0) is its neighbour in the union with source 1 unaligned
    # ("or": target 0 is aligned, which is allowed) -> added
    assert grow_diag_final_and({(0, 0), (1, 0)}, {(0, 0)}, 2, 1) == {(0, 0), (1, 0)}
    # growth goes on from what it added: (1,1) from (0,0), then (2,2) from (1,1)
    assert grow_diag_final_and({(0, 0), (1, 1), (2, 2)}, {(0, 0)}, 3, 3) == {(0, 0), (1, 1), (2, 2)}
    # a neighbour whose source and target are both aligned already is not added
    # intersection {(0,0), (1,1)}; (0,1) is in the union but 0 and 1 are both aligned
    assert grow_diag_final_and({(0, 0), (1, 1), (0, 1)}, {(0, 0), (1, 1)}, 2, 2) == {(0, 0), (1, 1)}
    # links outside the sentence are dropped
    assert grow_diag_final_and({(0, 0), (5, 0)}, {(0, 0)}, 1, 1) == {(0, 0)}


def test_eflomal_links_on_toy_pairs():
    pytest.importorskip("eflomal")
    from nmt.data.toy import make_toy_corpus
    from nmt_study.alignment import AerCounts, toy_links
    from nmt_study.eflomal_links import eflomal_links, pharaoh

    pairs = make_toy_corpus(300, 1, 0, seed=3).train
    started = time.perf_counter()
    links = eflomal_links(pairs)
    assert time.perf_counter() - started < 60
    assert len(links) == len(pairs)
    counts = AerCounts()
    for (src, tgt), found in zip(pairs, links):
        assert all(0 <= i < len(src.split()) and 0 <= j < len(tgt.split()) for i, j in found)
        counts += AerCounts.of(found, toy_links(src, tgt))
    # links that guess (each target word to a random source word) score about 0.9;
    # eflomal on 300 pairs does far better (0.42 on the toy test set with 1,000 pairs)
    assert counts.aer < 0.7
    assert pharaoh({(1, 0), (0, 2)}) == "0-2 1-0"
