"""Subword vocabularies: sentencepiece (unigram or BPE), joint or one per side.

Kudo & Richardson 2018, SentencePiece, arXiv:1808.06226; Kudo 2018 (unigram
language model, arXiv:1804.10959); Sennrich, Haddow & Birch 2016 (BPE,
arXiv:1508.07909).

Every vocabulary has pad=0, unk=1, bos=2, eos=3. Models are trained in
memory on the training split only and cached as `<cache_dir>/spm/<key>.<side>.model`,
where the key hashes the training text and the settings, so the same data
and settings reuse the files and any change trains new ones.

    tok = Tokenizer.train(corpus.train, vocab_size=8000, cache_dir="data")
    tok = Tokenizer.train_sampled(src_lines, tgt_lines, fingerprint, 8000, sample=1_000_000)

`train_sampled` is for corpora larger than memory: the sentences stream by
and a seeded reservoir keeps a random sample of them for sentencepiece
(whose own `input_sentence_size` sample differs from process to process).
    ids = tok.encode_src("Ein Hund läuft.")          # subword ids, no bos/eos
    tok.decode_tgt(ids)                                # detokenised text
"""

import hashlib
import io
import json
import math
import os
import random
import re
from collections.abc import Callable, Iterable
from itertools import islice
from pathlib import Path

import sentencepiece as spm

from nmt.base.atomic import atomic_write
from nmt.base.errors import NmtError
from nmt.base.file_inputs import refuse_special

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
MODEL_TYPES = ("unigram", "bpe")
MAX_TRAINING_SENTENCES = 2_000_000      # per model; more are sampled (input_sentence_size)


def _train_model(sentences: Iterable[str], vocab_size: int, model_type: str,
                 sample: int = MAX_TRAINING_SENTENCES) -> bytes:
    """One sentencepiece model proto, trained in memory, quietly, on at most
    `sample` sentences drawn at random from `sentences` (a reservoir sample)."""
    proto = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=proto,
            vocab_size=vocab_size, model_type=model_type, character_coverage=1.0,
            pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
            input_sentence_size=int(sample), shuffle_input_sentence=True,
            num_threads=max(1, min(16, os.cpu_count() or 1)), minloglevel=2)
    except RuntimeError as error:
        limit = re.search(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)", str(error))
        if limit:
            raise NmtError(f"data.vocab_size={vocab_size} is more than this training data allows "
                           f"(at most {limit.group(2)}); set a smaller data.vocab_size") from None
        chars = re.search(r"Vocabulary size is smaller than required_chars\. \d+ vs (\d+)", str(error))
        if chars:
            raise NmtError(f"data.vocab_size={vocab_size} is too small for the {chars.group(1)} "
                           "characters and special pieces of the training data; set "
                           f"data.vocab_size to at least {chars.group(1)}") from None
        raise NmtError(f"sentencepiece could not train a vocabulary: {str(error).splitlines()[0]}") from None
    return proto.getvalue()


def _processor(proto: bytes, side: str) -> spm.SentencePieceProcessor:
    try:
        processor = spm.SentencePieceProcessor(model_proto=proto)
    except (RuntimeError, TypeError) as error:
        raise NmtError(f"the {side} sentencepiece model is damaged ({error}); retrain or use "
                       "another checkpoint") from None
    specials = [processor.pad_id(), processor.unk_id(), processor.bos_id(), processor.eos_id()]
    if specials != [PAD_ID, UNK_ID, BOS_ID, EOS_ID]:
        raise NmtError(f"the {side} sentencepiece model has special ids {specials}, "
                       f"not pad=0, unk=1, bos=2, eos=3; train it with nmt")
    return processor


def reservoir_sample(items: Iterable, k: int, seed: int = 0) -> list:
    """k items drawn uniformly without replacement from a stream of unknown
    length, holding only k (all of them, in order, when there are at most k).

    Li 1994, Reservoir-sampling algorithms of time complexity O(n(1 + log(N/n))),
    ACM TOMS 20(4), Algorithm L: after the first k, skip a geometric number of
    items, put the next one at a random place, shrink w:

        w = u^(1/k);  skip = floor(log u' / log(1 - w));  w = w * u''^(1/k)
    """
    rng, stream = random.Random(seed), iter(items)
    sample = list(islice(stream, k))

    def uniform() -> float:             # in (0, 1): logs stay finite
        u = rng.random()
        while u == 0.0:
            u = rng.random()
        return u

    w = math.exp(math.log(uniform()) / k) if sample else 1.0
    end = object()
    while len(sample) == k and w < 1.0:
        skip = math.floor(math.log(uniform()) / math.log1p(-w))
        item = next(islice(stream, skip, None), end)
        if item is end:
            break
        sample[rng.randrange(k)] = item
        w *= math.exp(math.log(uniform()) / k)
    return sample


def _check_settings(vocab_size: int, model_type: str) -> None:
    if model_type not in MODEL_TYPES:
        raise NmtError(f"data.spm_model_type={model_type!r} unknown; choose one of {list(MODEL_TYPES)}")
    if int(vocab_size) <= 4:
        raise NmtError(f"data.vocab_size={vocab_size} leaves no room beyond the 4 special pieces")


def _settings(vocab_size: int, model_type: str, joint: bool) -> dict:
    return {"vocab_size": int(vocab_size), "model_type": model_type, "joint": bool(joint),
            "specials": [PAD_ID, UNK_ID, BOS_ID, EOS_ID], "sentencepiece": spm.__version__}


def cache_key(sides: dict[str, list[str]], settings: dict) -> str:
    """sha256 over the settings and every training sentence of every side."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for side in sorted(sides):
        digest.update(f"\0side={side}\0".encode())
        for sentence in sides[side]:
            digest.update(sentence.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()[:24]


def _write_atomic(path: Path, data: bytes) -> None:
    """The cache file whole or not at all (a signal mid-write removes the temporary file)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
    except OSError as error:
        raise NmtError(f"cannot write the vocabulary cache {path}: {error.strerror or error}; "
                       "free disk space or choose another cache_dir") from None


class Tokenizer:
    """Source and target sentencepiece models (the same one when joint)."""

    pad_id, unk_id, bos_id, eos_id = PAD_ID, UNK_ID, BOS_ID, EOS_ID

    def __init__(self, src_proto: bytes, tgt_proto: bytes, reused: bool = False):
        self._protos = {"src": bytes(src_proto), "tgt": bytes(tgt_proto)}
        self._src = _processor(self._protos["src"], "source")
        self._tgt = self._src if tgt_proto == src_proto else _processor(self._protos["tgt"], "target")
        self.reused = reused        # True when train() found the models in its cache

    @classmethod
    def train(cls, pairs: list[tuple[str, str]], vocab_size: int, model_type: str = "unigram",
              joint: bool = True, cache_dir=None) -> "Tokenizer":
        """Train on (src, tgt) training pairs, or reuse the cached models for the same input."""
        _check_settings(vocab_size, model_type)
        if not pairs:
            raise NmtError("no training sentences to learn a vocabulary from; check the training data")
        src, tgt = [s for s, _ in pairs], [t for _, t in pairs]
        sides = {"joint": src + tgt} if joint else {"src": src, "tgt": tgt}
        key = cache_key(sides, _settings(vocab_size, model_type, joint))
        return cls._load_or_train(key, {side: (lambda s=s: s) for side, s in sides.items()},
                                  vocab_size, model_type, joint, cache_dir, MAX_TRAINING_SENTENCES)

    @classmethod
    def train_sampled(cls, src_lines: Callable[[], Iterable[str]], tgt_lines: Callable[[], Iterable[str]],
                      fingerprint: str, vocab_size: int, model_type: str = "unigram", joint: bool = True,
                      cache_dir=None, sample: int = 1_000_000) -> "Tokenizer":
        """Train on a corpus that need not fit in memory, or reuse the cached models.

        `src_lines()` and `tgt_lines()` return fresh iterators over the training
        sentences; a random `sample` of them per model is kept (`reservoir_sample`,
        seeded, so the same data gives the same vocabulary anywhere), so memory is
        bounded by the sample, not the corpus. `fingerprint` names the data (e.g. a
        hash of the files' bytes) for the cache.
        """
        _check_settings(vocab_size, model_type)
        if int(sample) < 1:
            raise NmtError(f"data.spm_sentences={sample} must be a positive number of sentences")
        settings = dict(_settings(vocab_size, model_type, joint), sample=int(sample), data=fingerprint)
        key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:24]
        if joint:
            sides = {"joint": lambda: (s for lines in (src_lines(), tgt_lines()) for s in lines)}
        else:
            sides = {"src": src_lines, "tgt": tgt_lines}
        sides = {side: (lambda lines=lines: reservoir_sample(lines(), int(sample), seed=0))
                 for side, lines in sides.items()}
        return cls._load_or_train(key, sides, vocab_size, model_type, joint, cache_dir, sample)

    @classmethod
    def _load_or_train(cls, key: str, sides: dict[str, Callable[[], Iterable[str]]], vocab_size: int,
                       model_type: str, joint: bool, cache_dir, sample: int) -> "Tokenizer":
        folder = Path(cache_dir) / "spm" if cache_dir is not None else None
        protos, reused = {}, True
        for side, sentences in sides.items():
            path = folder / f"{key}.{side}.model" if folder else None
            if path is not None:            # a FIFO there: read or written, it would wait forever
                refuse_special(path, "the vocabulary cache", "remove it or choose another cache_dir")
            if path is not None and path.is_file():
                protos[side] = path.read_bytes()
                continue
            reused = False
            protos[side] = _train_model(sentences(), int(vocab_size), model_type, sample)
            if path is not None:
                _write_atomic(path, protos[side])
        if joint:
            return cls(protos["joint"], protos["joint"], reused=reused)
        return cls(protos["src"], protos["tgt"], reused=reused)

    # -- ids and pieces ------------------------------------------------------
    def encode_src(self, text: str) -> list[int]:
        """Source subword ids, without bos/eos."""
        return self._src.encode(text)

    def encode_tgt(self, text: str) -> list[int]:
        """Target subword ids, without bos/eos."""
        return self._tgt.encode(text)

    def decode_tgt(self, ids) -> str:
        """Detokenised target text; special ids (pad, bos, eos) are skipped."""
        return self._tgt.decode([int(i) for i in ids if int(i) > EOS_ID or int(i) == UNK_ID])

    def src_pieces(self, ids) -> list[str]:
        return [self._src.id_to_piece(int(i)) for i in ids]

    def tgt_pieces(self, ids) -> list[str]:
        return [self._tgt.id_to_piece(int(i)) for i in ids]

    @property
    def src_vocab_size(self) -> int:
        return self._src.get_piece_size()

    @property
    def tgt_vocab_size(self) -> int:
        return self._tgt.get_piece_size()

    @property
    def joint(self) -> bool:
        return self._src is self._tgt

    # -- checkpoints -----------------------------------------------------------
    def to_bytes(self) -> dict[str, bytes]:
        """{"src": model proto, "tgt": model proto}: safe for torch.load(weights_only=True)."""
        return dict(self._protos)

    @classmethod
    def from_bytes(cls, protos: dict[str, bytes]) -> "Tokenizer":
        if not isinstance(protos, dict) or not {"src", "tgt"} <= set(protos):
            raise NmtError("the checkpoint holds no sentencepiece models ('src' and 'tgt'); "
                           "it was not written by nmt's trainer")
        return cls(protos["src"], protos["tgt"])
