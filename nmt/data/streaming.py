"""Training corpora larger than memory: read from the files a buffer at a time.

    python -m nmt.train data=files_streaming data.train_src=big.de data.train_tgt=big.en \\
        data.valid_src=val.de data.valid_tgt=val.en

One pass at start-up counts the lines and notes the byte offset of every
`block` lines of both files (a few numbers per block, not per line). Each
epoch then

    1. permutes the blocks (seeded by seed and epoch),
    2. reads `buffer_pairs` pairs at a time from the next blocks (seek, read),
       encodes them and drops empty and too-long pairs,
    3. cuts the buffer into token-budget batches exactly as TokenBatcher does
       (sorted by length, random tie-breaks, shuffled batch order),
    4. serves batch g of the epoch to rank g % world_size.

Memory holds one buffer of encoded pairs and a block index, whatever the
corpus size (scripts/benchmarks/bench_streaming_memory.py measures it). Bucketing
happens within a buffer, so padding is a little higher than sorting the
whole corpus, and sentences meet only others from the same buffer's blocks.
Files must be plain text (a .gz cannot be read from the middle).

The vocabulary is learned from a seeded random sample of `spm_sentences`
sentences drawn while the files stream by (`Tokenizer.train_sampled`); its
cache key hashes the files' bytes.
"""

import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from nmt.data.batching import Batch, TokenBatcher, make_batch
from nmt.config_schema.data import sort_setting, whole_setting
from nmt.data.examples import PreparedData, drop_empty
from nmt.data.readers import BOM, read_parallel
from nmt.data.tokenizer import Tokenizer
from nmt.base.errors import NmtError
from nmt.base.file_inputs import refuse_special

log = logging.getLogger("nmt.data")
BLOCKS_PER_BUFFER = 16       # a buffer draws its pairs from this many random blocks


def _check_plain_file(path: Path) -> Path:
    path = Path(path)
    if not path.exists():
        raise NmtError(f"{path}: no such file; check the data paths in the config")
    if path.is_dir():
        raise NmtError(f"{path} is a directory; expected a text file with one sentence a line")
    refuse_special(path, "", "data.streaming reads a text file with one sentence a line, twice")
    if path.name.endswith(".gz"):
        raise NmtError(f"{path}: data.streaming reads plain text files; decompress it "
                       f"(gunzip -k {path}) and point the config at the result")
    return path


def _decode(raw: bytes, path: Path, line_no: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NmtError(f"{path} line {line_no}: invalid UTF-8 (byte {error.start + 1} of the line); "
                       "convert the file to UTF-8") from None
    if line_no == 1:
        text = text.removeprefix(BOM)
    return text.removesuffix("\n").removesuffix("\r")


def iter_lines(path, offset: int = 0, first_line: int = 1, count: int | None = None) -> Iterator[str]:
    """Lines of a UTF-8 file from byte `offset` (line number `first_line`), without line ends."""
    path = Path(path)
    with open(path, "rb") as handle:
        handle.seek(offset)
        for i, raw in enumerate(handle):
            if count is not None and i >= count:
                return
            yield _decode(raw, path, first_line + i)


def _block_offsets(path: Path, block: int) -> tuple[list[int], int]:
    """Byte offset of lines 0, block, 2*block, ... and the number of lines."""
    offsets, n, position = [], 0, 0
    with open(path, "rb") as handle:
        for raw in handle:
            if n % block == 0:
                offsets.append(position)
            position += len(raw)
            n += 1
    return offsets, n


def fingerprint(*paths) -> str:
    """sha256 over the files' bytes, read 1 MiB at a time."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(f"\0{Path(path).name}\0".encode())
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


class StreamingBatcher:
    """Token-budget batches over line-aligned files, `buffer_pairs` pairs in memory at a time.

    The same interface as TokenBatcher's `batches(epoch, rank, world_size)`,
    as an iterator; the epoch's sequence of batches is the same for any
    number of ranks, so a position counted in batches of all ranks resumes
    on any number of ranks.
    """

    def __init__(self, src_path, tgt_path, tokenizer: Tokenizer, batch_tokens: int, max_len: int,
                 buffer_pairs: int = 100_000, seed: int = 0, pad_to_multiple: int = 1, sort_by: str = "source"):
        self.src_path, self.tgt_path = _check_plain_file(src_path), _check_plain_file(tgt_path)
        self.tokenizer, self.max_len, self.seed = tokenizer, int(max_len), int(seed)
        self.batch_tokens, self.buffer_pairs = int(batch_tokens), int(buffer_pairs)
        self.pad_to_multiple = int(pad_to_multiple)     # as TokenBatcher's
        self.sort_by = sort_by                           # as TokenBatcher's, within each buffer
        self.block = max(1, self.buffer_pairs // BLOCKS_PER_BUFFER)
        src_offsets, n_src = _block_offsets(self.src_path, self.block)
        tgt_offsets, n_tgt = _block_offsets(self.tgt_path, self.block)
        for path, n in ((self.src_path, n_src), (self.tgt_path, n_tgt)):
            if n == 0:
                raise NmtError(f"{path} is empty; expected one sentence a line")
        if n_src != n_tgt:
            raise NmtError(f"{self.src_path} has {n_src} lines but {self.tgt_path} has {n_tgt}; "
                           "parallel files must have one translation per line")
        self.n_pairs = n_src
        self.offsets = np.array([src_offsets, tgt_offsets], dtype=np.int64).T   # (blocks, 2)
        self.dropped = {"empty": 0, "too_long": 0}                               # in the last full epoch

    def __len__(self) -> int:
        return self.n_pairs

    def _read_block(self, b: int) -> Iterator[tuple[str, str]]:
        first = b * self.block + 1
        src = iter_lines(self.src_path, int(self.offsets[b, 0]), first, self.block)
        tgt = iter_lines(self.tgt_path, int(self.offsets[b, 1]), first, self.block)
        return zip(src, tgt)

    def _encode(self, pairs, dropped: dict) -> list[tuple[list[int], list[int]]]:
        examples = []
        for src, tgt in pairs:
            if not src.strip() or not tgt.strip():
                dropped["empty"] += 1
                continue
            s, t = self.tokenizer.encode_src(src), self.tokenizer.encode_tgt(tgt)
            if not s or not t:
                dropped["empty"] += 1
            elif len(s) > self.max_len or len(t) > self.max_len:
                dropped["too_long"] += 1
            else:
                examples.append((s, t))
        return examples

    def buffers(self, epoch: int = 0) -> Iterator[list[tuple[list[int], list[int]]]]:
        """The epoch's buffers of encoded pairs, in the order they are served."""
        rng = np.random.default_rng([self.seed, int(epoch)])
        order = rng.permutation(len(self.offsets))
        dropped = {"empty": 0, "too_long": 0}
        for start in range(0, len(order), BLOCKS_PER_BUFFER):
            pairs = (pair for b in order[start:start + BLOCKS_PER_BUFFER] for pair in self._read_block(int(b)))
            yield self._encode(pairs, dropped)
        self.dropped = dropped

    def batches(self, epoch: int = 0, rank: int = 0, world_size: int = 1) -> Iterator[Batch]:
        """This rank's batches of `epoch`: every world_size-th batch, from `rank` on."""
        if world_size < 1 or not 0 <= rank < world_size:
            raise NmtError(f"rank={rank} must lie in [0, world_size={world_size})")
        rng = np.random.default_rng([self.seed, int(epoch), 1])
        g = 0                                            # the batch's number in the epoch, all ranks
        for examples in self.buffers(epoch):
            if not examples:
                continue
            buffer = TokenBatcher(examples, self.batch_tokens, shuffle=True,
                                  seed=int(rng.integers(2**31)), pad_to_multiple=self.pad_to_multiple,
                                  sort_by=self.sort_by)
            for indices in buffer.plan(epoch):
                if g % world_size == rank:
                    yield make_batch([buffer.examples[i] for i in indices], pad_to_multiple=self.pad_to_multiple)
                g += 1
        if epoch == 0 and rank == 0:
            log.info("streamed epoch 0: %d pairs, dropped %d empty and %d longer than %d subwords",
                     self.n_pairs, self.dropped["empty"], self.dropped["too_long"], self.max_len)


def prepare_streaming(cfg: dict, cache_dir, seed: int) -> PreparedData:
    """data.streaming=true: a sampled vocabulary and a StreamingBatcher over the training files.

    `cfg` is the plain dict check_data_config returned: kind files, the four
    file keys set, both halves of the test pair or neither."""
    max_len = whole_setting(cfg, "max_len")
    batch_tokens = whole_setting(cfg, "batch_tokens")
    vocab_size = whole_setting(cfg, "vocab_size")
    buffer_pairs = whole_setting(cfg, "buffer_pairs")
    sample = whole_setting(cfg, "spm_sentences")
    src_path, tgt_path = _check_plain_file(cfg["train_src"]), _check_plain_file(cfg["train_tgt"])

    valid, valid_empty = drop_empty(read_parallel(cfg["valid_src"], cfg["valid_tgt"]), source_only=True)
    test = []
    if cfg.get("test_src") is not None:
        test, _ = drop_empty(read_parallel(cfg["test_src"], cfg["test_tgt"]), source_only=True)
    if not valid:
        raise NmtError(f"{cfg['valid_src']}: the validation set has no non-empty source line; check its files")

    tokenizer = Tokenizer.train_sampled(
        lambda: (s for s in iter_lines(src_path) if s.strip()),
        lambda: (t for t in iter_lines(tgt_path) if t.strip()),
        fingerprint(src_path, tgt_path), vocab_size, str(cfg["spm_model_type"]),
        bool(cfg["joint_vocab"]), Path(cache_dir) if cache_dir is not None else None, sample)
    batcher = StreamingBatcher(src_path, tgt_path, tokenizer, batch_tokens, max_len, buffer_pairs, seed,
                               whole_setting(cfg, "pad_to_multiple"), sort_setting(cfg))
    stats = {"corpus": f"files-{src_path.name}", "train_pairs": len(batcher), "streaming": True,
             "buffer_pairs": buffer_pairs, "valid_pairs": len(valid), "test_pairs": len(test),
             "valid_dropped_empty": valid_empty, "src_vocab": tokenizer.src_vocab_size,
             "tgt_vocab": tokenizer.tgt_vocab_size, "vocab_reused": tokenizer.reused}
    log.info("%s: %d training pairs streamed %d at a time (empty and longer than %d subwords dropped "
             "as read), %d validation, %d test; vocabulary %d/%d (%s, from at most %d sampled sentences)",
             stats["corpus"], len(batcher), buffer_pairs, max_len, len(valid), len(test),
             tokenizer.src_vocab_size, tokenizer.tgt_vocab_size,
             "cached" if tokenizer.reused else "trained", sample)
    return PreparedData(tokenizer, batcher, valid, test, stats)
