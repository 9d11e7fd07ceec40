"""The toy dates task: deterministic, small, reordered, with a known alignment."""

import pytest

from nmt.data.toy import (FIRST_YEAR, LAST_YEAR, make_toy_corpus, parse, render, spell_day,
                          spell_year, toy_alignment, toy_translate)
from nmt.base.errors import NmtError


def test_worked_example():
    src, tgt, align = render(weekday=0, day=21, month=3, year=1984)
    assert src == "monday the twenty first of march nineteen eighty four"
    assert tgt == "1 9 8 4 - 0 3 - 2 1 mon"
    # source words: 0 monday 1 the 2 twenty 3 first 4 of 5 march 6 nineteen 7 eighty 8 four
    # 1,9 <- nineteen; 8 <- eighty; 4 <- four; "-", 0, 3 <- march; "-", 2 <- twenty; 1 <- first; mon <- monday
    assert align == [6, 6, 7, 8, 5, 5, 5, 2, 2, 3, 0]
    assert toy_alignment(src, tgt) == align


@pytest.mark.parametrize("year, words", [(1900, "nineteen hundred"), (2000, "two thousand"),
                                         (1905, "nineteen oh five"), (2012, "twenty twelve"),
                                         (1990, "nineteen ninety"), (2077, "twenty seventy seven")])
def test_years_by_hand(year, words):
    assert " ".join(spell_year(year)[0]) == words


def test_every_day_and_year_parses_back():
    for year in range(FIRST_YEAR, LAST_YEAR + 1):
        words = " ".join(spell_year(year)[0])
        assert parse(f"the first of may {words}")[3] == year
    for day in range(1, 32):
        words = " ".join(spell_day(day)[0])
        assert parse(f"sunday the {words} of may nineteen ten") == (6, day, 5, 1910)


def test_same_seed_same_corpus_other_seed_other_corpus():
    a, b, c = make_toy_corpus(50, 10, 10, seed=3), make_toy_corpus(50, 10, 10, seed=3), make_toy_corpus(50, 10, 10, seed=4)
    assert a == b
    assert a.train != c.train


def test_sizes_short_sentences_small_vocabulary_disjoint_splits():
    corpus = make_toy_corpus(2000, 100, 100, seed=0)
    assert (len(corpus.train), len(corpus.valid), len(corpus.test)) == (2000, 100, 100)
    everything = corpus.train + corpus.valid + corpus.test
    assert len({src for src, _ in everything}) == 2200
    assert max(len(src.split()) for src, _ in everything) <= 12
    src_words = {w for src, _ in everything for w in src.split()}
    tgt_words = {w for _, tgt in everything for w in tgt.split()}
    assert len(src_words) < 80 and len(tgt_words) < 20


def test_translation_is_a_function_and_alignment_is_not_the_diagonal():
    corpus = make_toy_corpus(300, 10, 10, seed=1)
    off_diagonal = 0
    for src, tgt in corpus.train:
        assert toy_translate(src) == tgt
        align = toy_alignment(src, tgt)
        assert len(align) == len(tgt.split())
        assert all(0 <= j < len(src.split()) for j in align)
        off_diagonal += align != list(range(len(align)))
        assert align[0] > align[-1]                     # the year leads, the day or weekday ends
    assert off_diagonal == len(corpus.train)


def test_wrong_pairs_and_sentences_are_refused():
    with pytest.raises(NmtError, match="not the toy translation"):
        toy_alignment("the first of may nineteen ten", "1 9 1 0 - 0 5 - 0 2")
    with pytest.raises(NmtError, match="not a toy-task sentence"):
        parse("a dog runs in the park")


def test_bad_sizes():
    with pytest.raises(NmtError, match="n_train"):
        make_toy_corpus(0, 10, 10, seed=0)
