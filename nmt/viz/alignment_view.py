"""Reference word links beside a translation's cross-attention: AER, precision, recall.

`--links FILE` (Pharaoh format, 'i-j' = source word i, target word j, from 0;
one line per sentence) gives the links of the source and of the translation
shown. For every layer and head of the cross-attention (and their mean),
the page shows Och & Ney's AER, precision and recall of the links that
attention reads, by the study's definitions (nmt.data.word_alignment):
each output subword linked to the source subword it attends most, words
linked when any of their subwords are, read at the same step and one step
later (Shift-Att, Chen et al. 2020: the row whose decoder input is the word).
"""

import math

import numpy as np

from nmt.data.word_alignment import AerCounts, attention_word_links, read_links, shifted_rows, word_index
from nmt.base.errors import NmtError


def parse_links(line: str, where: str) -> set[tuple[int, int]]:
    """One Pharaoh line -> links; NmtError naming `where` for a bad item."""
    try:
        return read_links(line)
    except ValueError as error:
        raise NmtError(f"{where}: {error}; write links as 'i-j' (source word i, target word j, from 0)") from None


def check_links_fit(links: set, src_pieces: list[str], tgt_pieces: list[str], where: str) -> tuple[int, int]:
    """(source words, target words) of the sentence; NmtError when a link points outside them."""
    n_src = word_index(src_pieces)[-1] + 1 if src_pieces else 0
    n_tgt = word_index(tgt_pieces)[-1] + 1 if tgt_pieces else 0
    outside = sorted((i, j) for i, j in links if i >= n_src or j >= n_tgt)
    if outside:
        i, j = outside[0]
        raise NmtError(f"{where}: link {i}-{j} does not fit the sentence: the source has {n_src} words and the "
                       f"translation {n_tgt} (links are source-target word indices from 0)")
    return n_src, n_tgt


def _scores(predicted: set, links: set) -> dict:
    counts = AerCounts.of(predicted, links)
    clean = lambda x: None if math.isnan(x) else round(x, 4)     # noqa: E731 (JSON has no NaN)
    return {"aer": clean(counts.aer), "precision": clean(counts.precision), "recall": clean(counts.recall)}


def alignment_readings(result: dict, links: set, where: str) -> dict:
    """The page's `alignment` of one explained translation (attention_data.explain)."""
    src, tgt = result["src_pieces"], result["tgt_pieces"][:-1]              # the translation, without </s>
    check_links_fit(links, src, tgt, where)
    cross = next((m for m in result["maps"] if m["name"] == "cross"), None)
    readings = {}
    if cross is not None and tgt:
        layers = np.asarray(cross["layers"], dtype=np.float64)              # (L, H, T+1, S)
        for layer in range(layers.shape[0]):
            heads = {str(h + 1): layers[layer, h] for h in range(layers.shape[1])}
            if layers.shape[1] > 1:                                      # the page's "mean" choice
                heads["mean"] = layers[layer].mean(0)
            for head, weights in heads.items():
                readings[f"{layer + 1}-{head}"] = {
                    "same": _scores(attention_word_links(weights[:-1], src, tgt), links),
                    "next": _scores(attention_word_links(shifted_rows(weights), src, tgt), links)}
    return {"links": sorted([i, j] for i, j in links), "src_words": word_index(src), "tgt_words": word_index(tgt),
            "readings": readings}
