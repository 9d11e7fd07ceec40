"""prepare_data: filtering with counts and a log line; the data configs load."""

import logging
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from nmt.data.pipeline import prepare_data
from nmt.base.errors import NmtError

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "data"
SENTENCES = [("der hund läuft", "the dog runs"), ("die katze schläft", "the cat sleeps"),
             ("ein vogel singt", "a bird sings"), ("der baum ist grün", "the tree is green")]


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def files_config(tmp_path, train, valid, test=None, **extra):
    cfg = OmegaConf.load(CONFIGS / "files.yaml")
    for split, pairs in (("train", train), ("valid", valid), ("test", test)):
        if pairs is not None:
            cfg[f"{split}_src"] = write(tmp_path / f"{split}.de", [s for s, _ in pairs])
            cfg[f"{split}_tgt"] = write(tmp_path / f"{split}.en", [t for _, t in pairs])
    cfg.update({"vocab_size": 40, "spm_model_type": "bpe", "max_len": 24, "batch_tokens": 64, **extra})
    return cfg


def test_empty_and_too_long_pairs_dropped_and_counted(tmp_path, caplog):
    long = (" ".join(["der hund läuft"] * 10), "the dog runs")        # 30 words, at least 30 pieces > max_len 24
    train = SENTENCES * 10 + [("", "the dog"), ("der hund", "   "), long, long]
    valid = [("der hund", "the dog"), ("", "the cat"), ("die katze", "")]
    test = [(" ", "x"), ("ein vogel", "a bird")]
    with caplog.at_level(logging.INFO, logger="nmt.data"):
        data = prepare_data(files_config(tmp_path, train, valid, test), tmp_path / "cache", seed=1)
    stats = data.stats
    assert stats["train_pairs"] == 40
    assert (stats["train_dropped_empty"], stats["train_dropped_too_long"]) == (2, 2)
    assert (stats["valid_dropped_empty"], stats["test_dropped_empty"]) == (1, 1)
    assert data.valid == [("der hund", "the dog"), ("die katze", "")]   # raw text; empty target kept
    assert data.test == [("ein vogel", "a bird")]
    assert len(data.train) == 40
    assert any("dropped 2 empty, 2 longer than 24 subwords" in r.getMessage() for r in caplog.records)


def test_toy_config_end_to_end(tmp_path):
    cfg = OmegaConf.load(CONFIGS / "toy.yaml")
    cfg.update({"n_train": 1000, "n_valid": 20, "n_test": 20})
    data = prepare_data(cfg, tmp_path, seed=3)
    assert data.stats["train_pairs"] == 1000 and data.stats["vocab_reused"] is False
    assert data.tokenizer.src_vocab_size == cfg.vocab_size
    src, tgt = data.valid[0]
    assert len(data.tokenizer.encode_src(src)) == len(src.split())       # one piece per toy word
    budget = cfg.batch_tokens
    assert all(len(b) * max(b.src.size(1), b.tgt.size(1)) <= budget for b in data.train.batches(0))
    assert prepare_data(cfg, tmp_path, seed=3).stats["vocab_reused"] is True


def test_configs_have_the_documented_keys():
    tokenizer_keys = {"max_len", "batch_tokens", "vocab_size", "spm_model_type", "joint_vocab"}
    m30k = OmegaConf.load(CONFIGS / "multi30k.yaml")
    assert m30k.kind == "multi30k" and m30k.path is None and m30k.hub_id == "bentrevett/multi30k"
    assert (m30k.src_lang, m30k.tgt_lang, m30k.max_len, m30k.batch_tokens, m30k.vocab_size) == ("de", "en", 100, 4096, 8000)
    assert (m30k.spm_model_type, m30k.joint_vocab) == ("unigram", True)
    files = OmegaConf.load(CONFIGS / "files.yaml")
    assert OmegaConf.missing_keys(files) == {"train_src", "train_tgt", "valid_src", "valid_tgt"}
    toy = OmegaConf.load(CONFIGS / "toy.yaml")
    assert {"n_train", "n_valid", "n_test", "seed"} <= set(toy)
    assert all(tokenizer_keys <= set(cfg) for cfg in (m30k, files, toy))


def test_mandatory_file_key_missing(tmp_path):
    with pytest.raises(NmtError, match=r"data\.train_src is not set; add data\.train_src=\.\.\."):
        prepare_data(OmegaConf.load(CONFIGS / "files.yaml"), tmp_path, seed=0)


def test_bad_numbers_and_nothing_left(tmp_path):
    with pytest.raises(NmtError, match=r"^data\.max_len=0: must be >= 1$"):
        prepare_data(files_config(tmp_path, SENTENCES * 10, SENTENCES, max_len=0), tmp_path, seed=0)
    with pytest.raises(NmtError, match=r"^data\.vocab_size=3: must be in \[5, 1048576\] \(4 special pieces"):
        prepare_data(files_config(tmp_path, SENTENCES * 10, SENTENCES, vocab_size=3), tmp_path, seed=0)
    streaming = files_config(tmp_path, SENTENCES * 10, SENTENCES, streaming=True, buffer_pairs=0)
    with pytest.raises(NmtError, match=r"^data\.buffer_pairs=0: must be >= 1$"):
        prepare_data(streaming, tmp_path, seed=0)     # the streaming route: the same rule, the same line
    with pytest.raises(NmtError, match="no training pair has text on both sides"):
        prepare_data(files_config(tmp_path, [("a", " ")], SENTENCES), tmp_path, seed=0)


def test_sort_by_reaches_both_batchers_and_a_bad_value_is_one_line(tmp_path):
    for route in ({}, {"streaming": True, "buffer_pairs": 16, "spm_sentences": 1000}):
        by_target = files_config(tmp_path, SENTENCES * 10, SENTENCES, sort_by="target", **route)
        assert prepare_data(by_target, tmp_path, seed=0).train.sort_by == "target"
        unknown = files_config(tmp_path, SENTENCES * 10, SENTENCES, sort_by="length", **route)
        with pytest.raises(NmtError, match=r"^data\.sort_by=length: .*source.*target"):
            prepare_data(unknown, tmp_path, seed=0)
    older = files_config(tmp_path, SENTENCES * 10, SENTENCES)
    del older["sort_by"]                               # a config from before the key: sorted by source
    assert prepare_data(older, tmp_path, seed=0).train.sort_by == "source"
