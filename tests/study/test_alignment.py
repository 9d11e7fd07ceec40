"""AER (Och and Ney 2003) and the subword-to-word mapping, by hand."""

import numpy as np
import pytest

from nmt_study.alignment import (AerCounts, aer, argmax_links, attention_word_links, read_links,
                                 toy_links, word_index, word_links, words_match)


def test_aer_of_a_3_by_4_attention_by_hand():
    # 3 target subwords (rows) over 4 source subwords (columns)
    w = np.array([[0.1, 0.6, 0.2, 0.1],     # peak on source 1
                  [0.5, 0.2, 0.2, 0.1],     # peak on source 0
                  [0.1, 0.1, 0.3, 0.5]])    # peak on source 3
    a = argmax_links(w)
    assert a == {(1, 0), (0, 1), (3, 2)}                     # (source, target)
    sure = {(1, 0), (2, 1), (3, 2), (0, 2)}
    # A∩S = {(1,0), (3,2)}: 2; |A| = 3, |S| = 4; S = P:
    # AER = 1 - (2 + 2) / (3 + 4) = 3/7 = 0.428571
    assert aer(a, sure) == pytest.approx(3 / 7)
    # P = S + {(0,1)}: A∩P = 3 -> AER = 1 - (2 + 3) / 7 = 2/7
    assert aer(a, sure, sure | {(0, 1)}) == pytest.approx(2 / 7)
    assert aer(sure, sure) == 0.0 and aer(set(), sure) == 1.0


def test_aer_sums_counts_over_sentences():
    # sentence 1: A = {(0,0),(1,1)}, S = {(0,0)}: |A|=2, |S|=1, hit 1
    # sentence 2: A = {(0,0)},       S = {(1,0)}: |A|=1, |S|=1, hit 0
    # corpus: 1 - 2*1 / (3 + 2) = 0.6 (the mean of sentence AERs, (1/3 + 1)/2, would be 0.667)
    counts = AerCounts()
    counts += AerCounts.of({(0, 0), (1, 1)}, {(0, 0)})
    counts += AerCounts.of({(0, 0)}, {(1, 0)})
    assert counts.aer == pytest.approx(0.6)


def test_subword_links_become_word_links():
    src = ["\u2581un", "believ", "able", "\u2581cat"]             # words: unbelievable cat
    tgt = ["\u2581chat", "\u2581in", "croy", "able"]              # words: chat incroyable
    assert word_index(src) == [0, 0, 0, 1] and word_index(tgt) == [0, 1, 1, 1]
    # subword links (source piece, target piece): believ->chat, cat->in, un->croy, cat->able
    links = {(1, 0), (3, 1), (0, 2), (3, 3)}
    # -> (0,0); (1,1); (0,1); (1,1) again: a word pair is linked once, if any of its pieces are
    assert word_links(links, word_index(src), word_index(tgt)) == {(0, 0), (1, 1), (0, 1)}
    # the same from weights whose rows peak on 1, 3, 0, 3
    w = np.eye(4)[[1, 3, 0, 3]]
    assert attention_word_links(w, src, tgt) == {(0, 0), (1, 1), (0, 1)}
    assert words_match(src, "unbelievable cat") and not words_match(src, "un believable cat")
    # a first piece without the mark still starts a word
    assert word_index(["a", "\u2581b", "c"]) == [0, 1, 1]


def test_toy_links_by_hand():
    # the(0) first(1) of(2) may(3) nineteen(4) ten(5) -> 1 9 1 0 - 0 5 - 0 1
    # year digits from nineteen, nineteen, ten, ten; "-" and the month digits from may;
    # "-" and the day digits from first
    assert toy_links("the first of may nineteen ten", "1 9 1 0 - 0 5 - 0 1") == {
        (4, 0), (4, 1), (5, 2), (5, 3), (3, 4), (3, 5), (3, 6), (1, 7), (1, 8), (1, 9)}


def test_pharaoh_links():
    assert read_links("0-0 2-1 1-1") == {(0, 0), (2, 1), (1, 1)} and read_links("") == set()
    with pytest.raises(ValueError, match="Pharaoh"):
        read_links("0-0 1:2")
