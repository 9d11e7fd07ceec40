"""Alignment error rate of attention against reference word links.

Used by the study (nmt_study, through nmt's public names) and the attention pages (`--links`).

Och & Ney 2003, A Systematic Comparison of Various Statistical Alignment
Models, Computational Linguistics 29(1), Sec. 5:

    AER(S, P; A) = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|)

A the predicted links, S the sure and P the possible reference links
(S ⊆ P). The study has one kind of reference link (the toy task's true
alignment, or an aligner's symmetrised links), so S = P and the formula
becomes 1 - 2|A ∩ S| / (|A| + |S|), one minus the F1 of A against S.
Over a corpus the four counts are summed over sentences first
(`AerCounts`), as Och and Ney do, rather than averaging sentence AERs.

How an alignment is read from attention weights (both are choices):

1. Subword links: each target subword t links to the one source subword
   its weights peak on, s = argmax_j a_t[j] (ties: the first). Every
   target subword gets exactly one link; no source subword is required
   to get one.
2. Word links: sentencepiece marks the first piece of each word with
   '▁'; source word i and target word k are linked when any subword of
   i is linked to any subword of k (the union over their pieces).

Links are (source word, target word) pairs, both counted from 0.
"""

from dataclasses import dataclass

import numpy as np

WORD_START = "\u2581"   # sentencepiece's word boundary mark


def word_index(pieces: list[str]) -> list[int]:
    """Sentencepiece pieces -> the word each belongs to (a piece with the
    mark starts a word; the first piece always does)."""
    index, word = [], -1
    for i, piece in enumerate(pieces):
        if piece.startswith(WORD_START) or i == 0:
            word += 1
        index.append(word)
    return index


def argmax_links(weights) -> set[tuple[int, int]]:
    """weights (T, S) -> {(source subword, target subword)}: each row's peak."""
    weights = np.asarray(weights)
    if weights.size == 0:
        return set()
    return {(int(s), t) for t, s in enumerate(weights.argmax(axis=1))}


def word_links(links: set[tuple[int, int]], src_words: list[int], tgt_words: list[int]) -> set[tuple[int, int]]:
    """Subword links -> word links: words linked when any of their pieces are."""
    return {(src_words[s], tgt_words[t]) for s, t in links}


def aer(predicted: set, sure: set, possible: set | None = None) -> float:
    """Och & Ney's AER of one link set; possible defaults to sure (S = P)."""
    return AerCounts.of(predicted, sure, possible).aer


@dataclass
class AerCounts:
    """|A|, |S|, |A ∩ S|, |A ∩ P| summed over sentences, and |A_L|: the
    predicted links of target words that have a reference link (words the
    reference leaves unlinked cannot be right, whatever A says of them)."""
    predicted: int = 0
    sure: int = 0
    hit_sure: int = 0
    hit_possible: int = 0
    predicted_linked: int = 0

    @classmethod
    def of(cls, predicted: set, sure: set, possible: set | None = None) -> "AerCounts":
        possible = sure if possible is None else possible | sure    # S ⊆ P by definition
        linked = {t for _, t in possible}
        return cls(len(predicted), len(sure), len(predicted & sure), len(predicted & possible),
                   sum(t in linked for _, t in predicted))

    @classmethod
    def from_list(cls, values: list[int]) -> "AerCounts":
        return cls(*values)

    def to_list(self) -> list[int]:
        return [self.predicted, self.sure, self.hit_sure, self.hit_possible, self.predicted_linked]

    def __iadd__(self, other: "AerCounts") -> "AerCounts":
        self.predicted += other.predicted
        self.sure += other.sure
        self.hit_sure += other.hit_sure
        self.hit_possible += other.hit_possible
        self.predicted_linked += other.predicted_linked
        return self

    @property
    def aer(self) -> float:
        total = self.predicted + self.sure
        return 1.0 - (self.hit_sure + self.hit_possible) / total if total else float("nan")

    @property
    def precision(self) -> float:
        """|A ∩ P| / |A|."""
        return self.hit_possible / self.predicted if self.predicted else float("nan")

    @property
    def recall(self) -> float:
        """|A ∩ S| / |S|."""
        return self.hit_sure / self.sure if self.sure else float("nan")

    @property
    def aer_linked(self) -> float:
        """AER with A restricted to target words the reference links (A ∩ S is
        unchanged: a sure link's target word is linked)."""
        total = self.predicted_linked + self.sure
        return 1.0 - (self.hit_sure + self.hit_possible) / total if total else float("nan")


def attention_word_links(weights, src_pieces: list[str], tgt_pieces: list[str]) -> set[tuple[int, int]]:
    """weights (T, S) over these pieces -> word links by the two steps above."""
    return word_links(argmax_links(weights), word_index(src_pieces), word_index(tgt_pieces))


def shifted_rows(weights):
    """weights (T+1, S), row t the attention that predicts target piece t (row
    T predicts </s>) -> (T, S) of the Shift-Att reading: target piece t read
    from the row whose decoder input is piece t, the one that predicts t+1.

    Chen, Liu, Chen, Jiang & Liu 2020, Accurate Word Alignment Induction from
    Neural Machine Translation, EMNLP (Shift-Att): a Transformer
    decoder attends to the source word of its input token more than to that
    of the token it is about to predict, so the alignment of y_t is read at
    step t+1."""
    return np.asarray(weights)[1:]


def read_links(line: str) -> set[tuple[int, int]]:
    """Pharaoh format 'i-j i-j ...' (source word i, target word j) -> links."""
    links = set()
    for item in line.split():
        i, sep, j = item.partition("-")
        if not sep or not i.isdigit() or not j.isdigit():
            raise ValueError(f"{item!r} is not a Pharaoh link 'i-j'")
        links.add((int(i), int(j)))
    return links
