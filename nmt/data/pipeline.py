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
from pathlib import Path

from nmt.data.alignments import train_guides
from nmt.data.batching import TokenBatcher
from nmt.config_schema.data import check_data_config, sort_setting, whole_setting
from nmt.data.corpora import load_corpus
from nmt.data.examples import PreparedData, drop_empty, encode_train
from nmt.data.streaming import prepare_streaming
from nmt.data.tokenizer import Tokenizer
from nmt.base.errors import NmtError

log = logging.getLogger("nmt.data")


def prepare_data(data_cfg, cache_dir, seed: int) -> PreparedData:
    """Load the corpus, learn (or reuse) the vocabulary, filter and batch the training data."""
    cfg = check_data_config(data_cfg)
    if cfg.get("streaming"):               # corpora larger than memory
        return prepare_streaming(cfg, cache_dir, seed)
    max_len = whole_setting(cfg, "max_len")
    batch_tokens = whole_setting(cfg, "batch_tokens")
    vocab_size = whole_setting(cfg, "vocab_size")
    corpus = load_corpus(cfg, cache_dir)

    train, _ = drop_empty(corpus.train, source_only=False)
    valid, valid_empty = drop_empty(corpus.valid, source_only=True)
    test, test_empty = drop_empty(corpus.test, source_only=True)
    if not train:
        raise NmtError(f"{corpus.name}: no training pair has text on both sides; check the training files")
    if not valid:
        raise NmtError(f"{corpus.name}: the validation set has no non-empty source line; check its files")

    tokenizer = Tokenizer.train(train, vocab_size, str(cfg["spm_model_type"]),
                                bool(cfg["joint_vocab"]),
                                Path(cache_dir) if cache_dir is not None else None)
    encoded = encode_train(corpus.train, tokenizer, max_len)
    if not encoded.examples:
        raise NmtError(f"{corpus.name}: every training pair is longer than data.max_len={max_len} "
                       "subwords; raise data.max_len")
    guides = None
    if cfg.get("train_alignments"):        # guided alignment: one Pharaoh line per training pair
        guides = train_guides(cfg["train_alignments"], corpus.train, encoded, tokenizer)
    batcher = TokenBatcher(encoded.examples, batch_tokens, shuffle=True, seed=seed, guides=guides,
                           pad_to_multiple=whole_setting(cfg, "pad_to_multiple"), sort_by=sort_setting(cfg))

    stats = {
        "corpus": corpus.name,
        "train_pairs": len(encoded.examples), "valid_pairs": len(valid), "test_pairs": len(test),
        "train_dropped_empty": encoded.empty, "train_dropped_too_long": encoded.too_long,
        "valid_dropped_empty": valid_empty, "test_dropped_empty": test_empty,
        "src_vocab": tokenizer.src_vocab_size, "tgt_vocab": tokenizer.tgt_vocab_size,
        "vocab_reused": tokenizer.reused,
        "padding": round(batcher.padding_ratio(0), 4),
    }
    log.info("%s: %d training pairs (dropped %d empty, %d longer than %d subwords), %d validation "
             "(dropped %d empty), %d test (dropped %d empty); vocabulary %d/%d (%s); padding %.1f%%",
             corpus.name, len(encoded.examples), encoded.empty, encoded.too_long, max_len, len(valid),
             valid_empty, len(test), test_empty, tokenizer.src_vocab_size, tokenizer.tgt_vocab_size,
             "cached" if tokenizer.reused else "trained", 100 * stats["padding"])
    return PreparedData(tokenizer, batcher, valid, test, stats)
