"""Alignment error rate of attention against reference word links, for the study.

The definitions (Och & Ney 2003's AER, how subword and word links are read
from attention weights) are nmt's (public names of nmt, defined in
nmt.data.word_alignment), where the attention pages' `--links` read them
too; this module re-exports them and adds what only the study needs.
"""

import math

# the pure definitions are nmt's, where the attention pages (--links) read them too
from nmt import (WORD_START, AerCounts, aer, argmax_links, attention_word_links,  # noqa: F401
                 read_links, shifted_rows, word_index, word_links)


def baseline_links(kind: str, n_src: int, n_tgt: int) -> set[tuple[int, int]]:
    """Links that read no model: "diagonal" links target word j to source word
    round(j (I-1) / (J-1)) (halves rounded up), "same_position" links j to
    min(j, I-1); words counted from 0, I source and J target words."""
    if n_src == 0 or n_tgt == 0:
        return set()
    if kind == "diagonal":
        return {(math.floor(j * (n_src - 1) / (n_tgt - 1) + 0.5) if n_tgt > 1 else 0, j) for j in range(n_tgt)}
    if kind == "same_position":
        return {(min(j, n_src - 1), j) for j in range(n_tgt)}
    raise ValueError(f"unknown baseline {kind!r}")


def one_link_floor(sure: set[tuple[int, int]], n_tgt: int) -> set[tuple[int, int]]:
    """The best alignment that gives every target word exactly one link: a
    reference link where the word has one (the lowest source word), any
    source word where it has none. Its AER is the floor of every reading
    that links each target word once."""
    best = {}
    for i, j in sorted(sure):
        best.setdefault(j, i)
    return {(best.get(j, 0), j) for j in range(n_tgt)}


def words_match(pieces: list[str], sentence: str) -> bool:
    """Do the pieces split into the sentence's whitespace words (same count)?"""
    return bool(pieces) and word_index(pieces)[-1] == len(sentence.split()) - 1


def toy_links(src: str, tgt: str) -> set[tuple[int, int]]:
    """The toy task's true word links (nmt.data.toy.toy_alignment)."""
    from nmt import toy_alignment

    return {(s, t) for t, s in enumerate(toy_alignment(src, tgt))}
