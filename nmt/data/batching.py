"""Token-budget batches of sentences of similar length.

Each epoch the examples are sorted by (source length, target length), ties
broken by a fresh random permutation, then cut greedily into batches whose
padded size B * max(S, T + 1) stays within `batch_tokens`; the batch order
is shuffled too. Sorting the whole set keeps padding small (5% of the
positions on Multi30k de-en, 8k unigram, 4096 tokens), and the random
tie-breaks change which sentences meet each epoch.

sort_by="target" sorts by (target length, source length) instead, as
Marian's default maxi-batch sort does: the target side then carries almost
no padding and the source side more. A target position costs the decoder
and the output layer, about 1.7 times a source position in transformer_small,
and T + 1 is usually the longer side the budget counts, so batches hold more
real target tokens (benchmarks/openblas_linear.md: on Multi30k de-en, 4.3%
padding against 5.8% in the timed batches, 1.03x the target tokens a second).
The batches differ, so a run's numbers do: "source" stays the default.
Everything is a function of (seed, epoch), so a resumed run sees the same
batches in the same order.

pad_to_multiple=m > 1 pads S and T (the decoder's input length) up to a
multiple of m, and the budget counts those padded widths: fewer distinct
batch shapes, so one CUDA graph is recorded per shape and replayed
(trainer.cuda_graphs=true, or trainer.compile_mode=reduce-overhead) instead
of one recorded per batch.
"""

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from nmt.base.errors import NmtError
from nmt.core.special_tokens import BOS_ID, EOS_ID, PAD_ID, UNK_ID

SORT_KEYS = ("source", "target")     # data.sort_by: the length sorted by first


@dataclass
class Batch:
    src: Tensor            # (B, S) long: subword ids, padded with 0
    tgt: Tensor            # (B, T+1) long: bos ... eos, padded with 0
    n_src_tokens: int      # real source tokens
    n_tgt_tokens: int      # real labels, tgt[:, 1:] != pad: subwords + eos
    alignment: Tensor | None = None   # (B, T, S) float guided-alignment target G of each label
                                      # (rows sum to 1, or 0 without a link); None without a file

    def __len__(self) -> int:
        return self.src.size(0)


def round_up(length, multiple: int):
    """The smallest multiple of `multiple` at least `length` (an int or an int array)."""
    return -(-length // multiple) * multiple


def make_batch(examples: list[tuple[list[int], list[int]]], guides: list | None = None,
               pad_to_multiple: int = 1) -> Batch:
    """Pad (src_ids, tgt_ids) pairs into one Batch; tgt gets bos and eos.
    guides: per example the (target subword, source subword, weight) entries
    of its guided-alignment target (nmt.data.alignments), or None.
    pad_to_multiple: S and T (tgt's length less one) are padded up to a multiple of it."""
    B = len(examples)
    S = round_up(max(len(s) for s, _ in examples), pad_to_multiple)
    T1 = round_up(max(len(t) for _, t in examples) + 1, pad_to_multiple) + 1   # bos + subwords + eos
    src = np.full((B, S), PAD_ID, dtype=np.int64)
    tgt = np.full((B, T1), PAD_ID, dtype=np.int64)
    for row, (s, t) in enumerate(examples):
        src[row, :len(s)] = s
        tgt[row, :len(t) + 2] = [BOS_ID, *t, EOS_ID]
    alignment = None
    if guides is not None:
        guide = np.zeros((B, T1 - 1, S), dtype=np.float32)   # (B, T, S), row t = label t
        for row, entries in enumerate(guides):
            for t, s, w in entries:
                guide[row, t, s] = w
        alignment = torch.from_numpy(guide)
    return Batch(torch.from_numpy(src), torch.from_numpy(tgt),                 # (B, S), (B, T+1)
                 n_src_tokens=sum(len(s) for s, _ in examples),
                 n_tgt_tokens=sum(len(t) + 1 for _, t in examples), alignment=alignment)


class TokenBatcher:
    """Batches of at most `batch_tokens` padded positions, B * max(S, T+1).

    examples: (src_ids, tgt_ids) without bos/eos. A sentence longer than the
    budget gets a batch of its own. An empty source becomes [unk], so every
    row has a position to attend to. shuffle=False gives one fixed order
    (sorted by length) for validation. pad_to_multiple: see the module's note;
    the budget counts the padded widths.
    """

    def __init__(self, examples, batch_tokens: int, shuffle: bool = True, seed: int = 0,
                 guides: list | None = None, pad_to_multiple: int = 1, sort_by: str = "source"):
        if sort_by not in SORT_KEYS:
            raise NmtError(f"data.sort_by={sort_by!r} unknown; choose one of {', '.join(SORT_KEYS)}")
        self.sort_by = sort_by
        if int(batch_tokens) < 1:
            raise NmtError(f"data.batch_tokens={batch_tokens} must be a positive number of tokens")
        if int(pad_to_multiple) < 1:
            raise NmtError(f"data.pad_to_multiple={pad_to_multiple} must be a positive number of positions")
        self.pad_to_multiple = int(pad_to_multiple)
        self.examples = [(list(s) or [UNK_ID], list(t)) for s, t in examples]
        if guides is not None and len(guides) != len(self.examples):
            raise ValueError(f"{len(guides)} alignment guides for {len(self.examples)} examples")
        self.guides = guides        # per example, nmt.data.alignments.train_guides; or None
        self.batch_tokens, self.shuffle, self.seed = int(batch_tokens), bool(shuffle), int(seed)
        self.src_len = np.array([len(s) for s, _ in self.examples], dtype=np.int64)
        self.tgt_len = np.array([len(t) + 2 for _, t in self.examples], dtype=np.int64)   # T+1 row length
        # the widths the batch tensors get: S, and T+1 with T padded to the multiple
        self.src_width = round_up(self.src_len, self.pad_to_multiple)
        self.tgt_width = round_up(self.tgt_len - 1, self.pad_to_multiple) + 1

    def __len__(self) -> int:
        return len(self.examples)

    def plan(self, epoch: int = 0) -> list[list[int]]:
        """Example indices of every batch of `epoch`, in the order they are served."""
        n = len(self.examples)
        rng = np.random.default_rng([self.seed, int(epoch)])
        tiebreak = rng.permutation(n) if self.shuffle else np.arange(n)
        # By source length, then target length (sort_by="target": the other
        # way round), the second running up and down in turn (up for even first
        # lengths, down for odd) so that the batch that spans two first
        # lengths joins similar second lengths.
        first, second = (self.src_len, self.tgt_len) if self.sort_by == "source" else (self.tgt_len, self.src_len)
        snake = np.where(first % 2 == 0, second, -second)
        order = np.lexsort((tiebreak, snake, first))           # primary key last
        batches, current, width = [], [], 0
        for i in order.tolist():
            grown = max(width, int(self.src_width[i]), int(self.tgt_width[i]))
            if current and (len(current) + 1) * grown > self.batch_tokens:
                batches.append(current)
                current, grown = [], max(int(self.src_width[i]), int(self.tgt_width[i]))
            current.append(i)
            width = grown
        if current:
            batches.append(current)
        if self.shuffle:
            batches = [batches[j] for j in rng.permutation(len(batches))]
        return batches

    def batches(self, epoch: int = 0, rank: int = 0, world_size: int = 1) -> list[Batch]:
        """The batches of `epoch`; with world_size > 1, this rank's share.

        Ranks take every world_size-th batch, so their shares are disjoint,
        together cover the epoch, and differ in count by at most one (a DDP
        loop should stop all ranks at the shortest share).
        """
        if world_size < 1 or not 0 <= rank < world_size:
            raise NmtError(f"rank={rank} must lie in [0, world_size={world_size})")
        return [make_batch([self.examples[i] for i in indices],
                           None if self.guides is None else [self.guides[i] for i in indices],
                           self.pad_to_multiple)
                for indices in self.plan(epoch)[rank::world_size]]

    def padding_ratio(self, epoch: int = 0) -> float:
        """Padding positions / all positions of src and tgt tensors, over the epoch."""
        total = real = 0
        for indices in self.plan(epoch):
            total += len(indices) * (int(self.src_width[indices].max()) + int(self.tgt_width[indices].max()))
            real += int(self.src_len[indices].sum() + self.tgt_len[indices].sum())
        return 1.0 - real / total if total else 0.0
