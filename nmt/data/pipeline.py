"""From the `data` config to what the trainer needs: a tokenizer, training
batches, and raw validation and test pairs for BLEU.

    data = prepare_data(cfg.data, cache_dir="data", seed=1)
    for batch in data.train.batches(epoch):  ...
    data.stats    # {"train_pairs": 29000, "train_dropped_empty": 0, ...}

With `data.streaming=true` (data=files_streaming) the training files are
read a buffer at a time instead (`streaming.py`).

Training pairs with an empty side, or longer than `max_len` subwords on
either side, are dropped; validation and test keep their raw text and lose
only pairs with an empty source. Every drop is counted in `stats` and
logged (logger `nmt.data`).
"""

import logging
from dataclasses import dataclass, field
from pathlib import Path

from nmt.data.batching import TokenBatcher
from nmt.data.corpora import check_data_config, load_corpus
from nmt.data.tokenizer import Tokenizer
from nmt.errors import NmtError

log = logging.getLogger("nmt.data")
Pairs = list[tuple[str, str]]


@dataclass
class PreparedData:
    tokenizer: Tokenizer
    train: TokenBatcher
    valid: Pairs
    test: Pairs
    stats: dict = field(default_factory=dict)


def _positive_int(cfg: dict, key: str, default: int) -> int:
    value = cfg.get(key, default)
    try:
        value = int(value)
    except (TypeError, ValueError):
        value = 0
    if value < 1:
        raise NmtError(f"data.{key}={cfg.get(key)!r} must be a positive integer")
    return value


def _drop_empty(pairs: Pairs, source_only: bool) -> tuple[Pairs, int]:
    kept = [(s, t) for s, t in pairs if s.strip() and (source_only or t.strip())]
    return kept, len(pairs) - len(kept)


def encode_train(pairs: Pairs, tokenizer: Tokenizer, max_len: int):
    """(src_ids, tgt_ids) of the pairs that fit: counts of (kept, empty after encoding, too long)."""
    examples, empty, too_long = [], 0, 0
    for src, tgt in pairs:
        s, t = tokenizer.encode_src(src), tokenizer.encode_tgt(tgt)
        if not s or not t:
            empty += 1
        elif len(s) > max_len or len(t) > max_len:
            too_long += 1
        else:
            examples.append((s, t))
    return examples, empty, too_long


def prepare_data(data_cfg, cache_dir, seed: int) -> PreparedData:
    """Load the corpus, learn (or reuse) the vocabulary, filter and batch the training data."""
    cfg = check_data_config(data_cfg)
    if cfg.get("streaming"):               # corpora larger than memory
        from nmt.data.streaming import prepare_streaming

        return prepare_streaming(cfg, cache_dir, seed)
    max_len = _positive_int(cfg, "max_len", 100)
    batch_tokens = _positive_int(cfg, "batch_tokens", 4096)
    vocab_size = _positive_int(cfg, "vocab_size", 8000)
    corpus = load_corpus(cfg, cache_dir)

    train, train_empty = _drop_empty(corpus.train, source_only=False)
    valid, valid_empty = _drop_empty(corpus.valid, source_only=True)
    test, test_empty = _drop_empty(corpus.test, source_only=True)
    if not train:
        raise NmtError(f"{corpus.name}: no training pair has text on both sides; check the training files")
    if not valid:
        raise NmtError(f"{corpus.name}: the validation set has no non-empty source line; check its files")

    tokenizer = Tokenizer.train(train, vocab_size, str(cfg.get("spm_model_type", "unigram")),
                                bool(cfg.get("joint_vocab", True)),
                                Path(cache_dir) if cache_dir is not None else None)
    examples, encoded_empty, too_long = encode_train(train, tokenizer, max_len)
    if not examples:
        raise NmtError(f"{corpus.name}: every training pair is longer than data.max_len={max_len} "
                       "subwords; raise data.max_len")
    guides = None
    if cfg.get("train_alignments"):        # guided alignment: one Pharaoh line per training pair
        from nmt.data.alignments import train_guides

        guides = train_guides(cfg["train_alignments"], corpus.train, tokenizer, max_len)
    batcher = TokenBatcher(examples, batch_tokens, shuffle=True, seed=seed, guides=guides)

    stats = {
        "corpus": corpus.name,
        "train_pairs": len(examples), "valid_pairs": len(valid), "test_pairs": len(test),
        "train_dropped_empty": train_empty + encoded_empty, "train_dropped_too_long": too_long,
        "valid_dropped_empty": valid_empty, "test_dropped_empty": test_empty,
        "src_vocab": tokenizer.src_vocab_size, "tgt_vocab": tokenizer.tgt_vocab_size,
        "vocab_reused": tokenizer.reused,
        "padding": round(batcher.padding_ratio(0), 4),
    }
    log.info("%s: %d training pairs (dropped %d empty, %d longer than %d subwords), %d validation "
             "(dropped %d empty), %d test (dropped %d empty); vocabulary %d/%d (%s); padding %.1f%%",
             corpus.name, len(examples), stats["train_dropped_empty"], too_long, max_len, len(valid),
             valid_empty, len(test), test_empty, tokenizer.src_vocab_size, tokenizer.tgt_vocab_size,
             "cached" if tokenizer.reused else "trained", 100 * stats["padding"])
    return PreparedData(tokenizer, batcher, valid, test, stats)
