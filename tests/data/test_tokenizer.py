"""Tokenizer: fixed special ids, disk cache, checkpoint bytes, friendly errors."""

import io

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nmt.data.tokenizer import Tokenizer
from nmt.data.toy import make_toy_corpus
from nmt.base.errors import NmtError

TOY = make_toy_corpus(500, 5, 5, seed=0).train
ALPHABET = sorted({ch for src, tgt in TOY for ch in src + tgt})


@pytest.fixture(scope="module")
def toy_tokenizer():
    return Tokenizer.train(TOY, vocab_size=100, model_type="bpe")


def test_special_ids_are_fixed(toy_tokenizer):
    assert toy_tokenizer.src_pieces([0, 1, 2, 3]) == ["<pad>", "<unk>", "<s>", "</s>"]
    ids = toy_tokenizer.encode_src(TOY[0][0])
    assert ids and min(ids) > 3                       # no pad/bos/eos added, nothing unknown


def test_decode_skips_pad_bos_eos(toy_tokenizer):
    ids = toy_tokenizer.encode_tgt("1 9 8 4 - 0 3")
    assert toy_tokenizer.decode_tgt([2, *ids, 3, 0, 0]) == "1 9 8 4 - 0 3"


def test_cache_reuses_then_retrains(tmp_path):
    first = Tokenizer.train(TOY, vocab_size=60, model_type="unigram", cache_dir=tmp_path)
    files = sorted((tmp_path / "spm").glob("*.model"))
    assert not first.reused and len(files) == 1
    stamp = files[0].stat().st_mtime_ns

    again = Tokenizer.train(TOY, vocab_size=60, model_type="unigram", cache_dir=tmp_path)
    assert again.reused and files[0].stat().st_mtime_ns == stamp
    assert again.to_bytes() == first.to_bytes()

    other_size = Tokenizer.train(TOY, vocab_size=70, model_type="unigram", cache_dir=tmp_path)
    other_data = Tokenizer.train(TOY[:-1], vocab_size=60, model_type="unigram", cache_dir=tmp_path)
    assert not other_size.reused and not other_data.reused
    assert len(list((tmp_path / "spm").glob("*.model"))) == 3


def test_the_same_data_gives_the_same_model_bytes(tmp_path):
    """Trained twice from scratch (no cache), the models are byte for byte equal: what lets
    the test workers share one cache (tests/conftest.py) and a cache file be rewritten safely."""
    for model_type in ("unigram", "bpe"):
        first = Tokenizer.train(TOY, vocab_size=60, model_type=model_type, cache_dir=tmp_path / f"{model_type}_1")
        again = Tokenizer.train(TOY, vocab_size=60, model_type=model_type, cache_dir=tmp_path / f"{model_type}_2")
        assert not first.reused and not again.reused
        assert again.to_bytes() == first.to_bytes()


def test_separate_vocabularies(tmp_path):
    pairs = [("der hund läuft schnell", "the dog runs fast"), ("die katze schläft", "the cat sleeps")] * 30
    tok = Tokenizer.train(pairs, vocab_size=25, model_type="bpe", joint=False, cache_dir=tmp_path)
    assert not tok.joint and tok.to_bytes()["src"] != tok.to_bytes()["tgt"]
    assert len(list((tmp_path / "spm").glob("*.model"))) == 2
    assert 1 in tok.encode_src("xyz")                   # letters only English has: unknown to German
    assert tok.decode_tgt(tok.encode_tgt("the cat runs")) == "the cat runs"


def test_vocabulary_too_large_is_one_line(tmp_path):
    with pytest.raises(NmtError, match=r"data\.vocab_size=5000 .*at most \d+.*smaller data\.vocab_size") as error:
        Tokenizer.train(TOY[:20], vocab_size=5000, cache_dir=tmp_path)
    assert "\n" not in str(error.value)


def test_unknown_model_type():
    with pytest.raises(NmtError, match="spm_model_type='word' unknown"):
        Tokenizer.train(TOY, vocab_size=60, model_type="word")


def test_bytes_survive_a_weights_only_checkpoint(toy_tokenizer):
    buffer = io.BytesIO()
    torch.save({"tokenizer": toy_tokenizer.to_bytes()}, buffer)
    buffer.seek(0)
    loaded = Tokenizer.from_bytes(torch.load(buffer, weights_only=True)["tokenizer"])
    src, tgt = TOY[1]
    assert loaded.encode_src(src) == toy_tokenizer.encode_src(src)
    assert loaded.decode_tgt(loaded.encode_tgt(tgt)) == tgt
    assert loaded.tgt_vocab_size == toy_tokenizer.tgt_vocab_size == 100


def test_from_bytes_refuses_junk():
    with pytest.raises(NmtError, match="no sentencepiece models"):
        Tokenizer.from_bytes({"model": b""})
    with pytest.raises(NmtError, match="damaged"):
        Tokenizer.from_bytes({"src": b"not a model", "tgt": b"not a model"})


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.sampled_from(ALPHABET), max_size=60))
def test_round_trip_on_the_training_alphabet(toy_tokenizer, text):
    ids = toy_tokenizer.encode_tgt(text)
    assert toy_tokenizer.decode_tgt(ids) == " ".join(text.split())   # spaces normalised, nothing lost
    assert len(toy_tokenizer.src_pieces(toy_tokenizer.encode_src(text))) >= 0


def test_a_cache_that_cannot_be_written_is_one_line():
    # was a FileNotFoundError traceback from the cache's mkdir
    with pytest.raises(NmtError) as caught:
        Tokenizer.train(TOY, vocab_size=60, model_type="unigram", cache_dir="/proc/nmt_cannot_be_made")
    message = str(caught.value)
    assert message.startswith("cannot write the vocabulary cache /proc/nmt_cannot_be_made/spm/"), message
    assert message.endswith(": No such file or directory; free disk space or choose another cache_dir")
