"""Streaming batches from files: every pair once per epoch, within budget,
disjoint rank shares, seeded order, one-line errors; a sampled vocabulary;
the trainer on data=files_streaming."""

import json

import pytest

from nmt.data.streaming import StreamingBatcher, iter_lines
from nmt.data.tokenizer import Tokenizer
from nmt.data.toy import make_toy_corpus
from nmt.base.errors import NmtError
from tests.helpers import train


def write_pairs(folder, name, pairs):
    (folder / f"{name}.src").write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
    (folder / f"{name}.tgt").write_text("".join(t + "\n" for _, t in pairs), encoding="utf-8")
    return folder / f"{name}.src", folder / f"{name}.tgt"


@pytest.fixture(scope="module")
def toy_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("streaming")
    corpus = make_toy_corpus(600, 30, 0, seed=3)
    train_files = write_pairs(folder, "train", corpus.train)
    write_pairs(folder, "valid", corpus.valid)
    return folder, corpus, train_files


@pytest.fixture(scope="module")
def tokenizer(toy_files, cache_dir):
    _, _, (src, tgt) = toy_files
    return Tokenizer.train_sampled(lambda: iter_lines(src), lambda: iter_lines(tgt), "toy-600",
                                   240, "bpe", joint=True, cache_dir=cache_dir, sample=500)


def rows(batches):
    """Each batch row as (source ids, target ids) without padding, bos or eos."""
    out = []
    for b in batches:
        for s, t in zip(b.src.tolist(), b.tgt.tolist()):
            out.append((tuple(i for i in s if i), tuple(i for i in t[1:] if i > 3)))
    return out


def test_every_pair_once_per_epoch_within_budget(toy_files, tokenizer):
    _, corpus, (src, tgt) = toy_files
    batcher = StreamingBatcher(src, tgt, tokenizer, batch_tokens=200, max_len=32, buffer_pairs=64, seed=1)
    assert len(batcher) == 600 and batcher.block == 4          # 64 pairs a buffer, 16 blocks of 4
    batches = list(batcher.batches(0))
    for b in batches:
        assert len(b) * max(b.src.size(1), b.tgt.size(1)) <= 200
    expected = sorted((tuple(tokenizer.encode_src(s)), tuple(tokenizer.encode_tgt(t))) for s, t in corpus.train)
    assert sorted(rows(batches)) == expected
    assert batcher.dropped == {"empty": 0, "too_long": 0}


def test_pad_to_multiple_streams_padded_widths_within_budget(toy_files, tokenizer):
    _, corpus, (src, tgt) = toy_files
    plain = StreamingBatcher(src, tgt, tokenizer, batch_tokens=200, max_len=32, buffer_pairs=64, seed=1)
    padded = StreamingBatcher(src, tgt, tokenizer, batch_tokens=200, max_len=32, buffer_pairs=64, seed=1,
                              pad_to_multiple=8)
    batches = list(padded.batches(0))
    for b in batches:
        assert b.src.size(1) % 8 == 0 and (b.tgt.size(1) - 1) % 8 == 0
        assert len(b) * max(b.src.size(1), b.tgt.size(1)) <= 200
    assert sorted(rows(batches)) == sorted(rows(plain.batches(0)))        # the same pairs, padded further


def test_ranks_share_the_same_sequence_and_epochs_differ(toy_files, tokenizer):
    _, _, (src, tgt) = toy_files
    batcher = StreamingBatcher(src, tgt, tokenizer, batch_tokens=200, max_len=32, buffer_pairs=64, seed=1)
    whole = rows(batcher.batches(0))
    again = rows(batcher.batches(0))
    assert whole == again                                        # a function of (seed, epoch)
    even, odd = list(batcher.batches(0, 0, 2)), list(batcher.batches(0, 1, 2))
    assert 0 <= len(even) - len(odd) <= 1
    interleaved = [b for pair in zip(even, odd) for b in pair] + even[len(odd):]
    assert rows(interleaved) == whole                            # batch g goes to rank g % 2
    assert rows(batcher.batches(1)) != whole and sorted(rows(batcher.batches(1))) == sorted(whole)


def test_too_long_and_empty_pairs_are_dropped_and_counted(tmp_path, tokenizer):
    src, tgt = write_pairs(tmp_path, "t", [("monday the first", "x"), ("", "y"),
                                           ("monday " * 40, "z"), ("friday", "")])
    batcher = StreamingBatcher(src, tgt, tokenizer, batch_tokens=500, max_len=32)
    assert len(rows(batcher.batches(0))) == 1
    assert batcher.dropped == {"empty": 2, "too_long": 1}


def test_one_line_errors(tmp_path, tokenizer):
    src, tgt = write_pairs(tmp_path, "t", [("a", "b"), ("c", "d")])
    with open(tgt, "a") as handle:
        handle.write("extra\n")
    with pytest.raises(NmtError, match="has 2 lines but .* has 3"):
        StreamingBatcher(src, tgt, tokenizer, 100, 32)
    (tmp_path / "t.gz").write_bytes(b"")
    with pytest.raises(NmtError, match="plain text files; decompress it"):
        StreamingBatcher(tmp_path / "t.gz", tgt, tokenizer, 100, 32)
    src.write_bytes(b"ok\n\xff bad\n")
    with pytest.raises(NmtError, match=r"t.src line 2: invalid UTF-8 \(byte 1 of the line\)"):
        list(iter_lines(src))


def test_sampled_vocabulary_is_cached(toy_files, tokenizer, cache_dir):
    _, _, (src, tgt) = toy_files
    again = Tokenizer.train_sampled(lambda: iter_lines(src), lambda: iter_lines(tgt), "toy-600",
                                    240, "bpe", joint=True, cache_dir=cache_dir, sample=500)
    assert again.reused and again.to_bytes() == tokenizer.to_bytes()
    with pytest.raises(NmtError, match="spm_sentences=0"):
        Tokenizer.train_sampled(lambda: iter_lines(src), lambda: iter_lines(tgt), "x", 240, "bpe",
                                sample=0)


def test_trainer_on_files_streaming(toy_files, tmp_path, cache_dir):
    folder, _, _ = toy_files
    files = [f"data.{k}={folder}/{name}" for k, name in (("train_src", "train.src"), ("train_tgt", "train.tgt"),
                                                          ("valid_src", "valid.src"), ("valid_tgt", "valid.tgt"))]
    trainer = train(tmp_path, "experiment=quickstart", "data=files_streaming", *files, "data.vocab_size=240",
                    "data.spm_model_type=bpe", "data.max_len=32", "data.batch_tokens=300",
                    "data.buffer_pairs=128", "data.spm_sentences=1000", "trainer.max_steps=6",
                    "trainer.val_every=6", "trainer.heatmap_sentences=0", cache_dir=cache_dir)
    assert trainer.step == 6 and trainer.data.stats["streaming"] is True
    assert json.loads((tmp_path / "summary.json").read_text())["step"] == 6


def test_reservoir_sample_by_hand_and_uniform():
    from collections import Counter

    from nmt.data.tokenizer import reservoir_sample

    assert reservoir_sample(iter("abc"), 5) == ["a", "b", "c"]       # at most k: all, in order
    assert reservoir_sample(range(1000), 10, seed=4) == reservoir_sample(range(1000), 10, seed=4)
    sample = reservoir_sample(range(1000), 10, seed=4)
    assert len(set(sample)) == 10 and all(0 <= x < 1000 for x in sample)
    # each of 10 items lands in a 3-sample with probability 3/10: 6000 draws, 1800 expected,
    # standard deviation sqrt(6000 * 0.3 * 0.7) = 35.5; allow 5 of them
    counts = Counter(x for seed in range(6000) for x in reservoir_sample(range(10), 3, seed))
    assert all(abs(counts[x] - 1800) < 180 for x in range(10)), counts


def test_sort_by_target_streams_every_pair_with_less_target_padding(toy_files, tokenizer):
    _, _, (src, tgt) = toy_files
    by_source = list(StreamingBatcher(src, tgt, tokenizer, batch_tokens=200, max_len=32, buffer_pairs=64,
                                      seed=1).batches(0))
    by_target = list(StreamingBatcher(src, tgt, tokenizer, batch_tokens=200, max_len=32, buffer_pairs=64,
                                      seed=1, sort_by="target").batches(0))
    assert sorted(rows(by_target)) == sorted(rows(by_source))            # the same pairs, batched otherwise

    def target_padding(batches):
        return 1 - sum(int((b.tgt != 0).sum()) for b in batches) / sum(b.tgt.numel() for b in batches)

    assert target_padding(by_target) < target_padding(by_source)
