"""Raw pairs to training examples: the records every corpus and batcher share.

    corpus.train                       # [("zwei Männer", "two men"), ...] raw text
    encoded = encode_train(corpus.train, tokenizer, max_len=100)
    encoded.examples[0]                # ([12, 7], [9, 31]) subword ids, no bos/eos
    encoded.kept[0]                    # index in corpus.train of that example

A training pair is kept when both sides have text and both encode to 1 to
`max_len` subwords; `kept` lets anything given one line per raw pair (word
alignments) follow the same selection without filtering again.
"""

from dataclasses import dataclass, field


Pairs = list[tuple[str, str]]
Example = tuple[list[int], list[int]]


@dataclass
class Corpus:
    """Train, validation and test pairs of raw (untokenised) sentences."""

    train: Pairs
    valid: Pairs
    test: Pairs = field(default_factory=list)
    name: str = "corpus"


@dataclass
class PreparedData:
    """What training needs from the `data` config: the tokenizer, a batcher of
    training examples (`batches(epoch)`), raw validation and test pairs, and
    the counts of what was read and dropped."""

    tokenizer: object
    train: object
    valid: Pairs
    test: Pairs
    stats: dict = field(default_factory=dict)


@dataclass
class EncodedPairs:
    """The examples kept from a list of raw pairs, their indices in it, and
    how many pairs were dropped as empty (either side) or too long."""

    examples: list[Example]
    kept: list[int]
    empty: int
    too_long: int


def drop_empty(pairs: Pairs, source_only: bool) -> tuple[Pairs, int]:
    """The pairs with text (on the source side only, or on both), and how many were dropped."""
    kept = [(s, t) for s, t in pairs if s.strip() and (source_only or t.strip())]
    return kept, len(pairs) - len(kept)


def encode_train(pairs: Pairs, tokenizer, max_len: int) -> EncodedPairs:
    """Encode the training pairs; keep those with 1 to `max_len` subwords on both sides."""
    examples, kept, empty, too_long = [], [], 0, 0
    for index, (src, tgt) in enumerate(pairs):
        if not (src.strip() and tgt.strip()):
            empty += 1
            continue
        s, t = tokenizer.encode_src(src), tokenizer.encode_tgt(tgt)
        if not s or not t:
            empty += 1
        elif len(s) > max_len or len(t) > max_len:
            too_long += 1
        else:
            examples.append((s, t))
            kept.append(index)
    return EncodedPairs(examples, kept, empty, too_long)
