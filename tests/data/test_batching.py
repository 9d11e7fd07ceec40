"""TokenBatcher: budget, padding, masks, determinism, ranks; padding on real Multi30k."""

import random

import pytest
import torch

from nmt.data.batching import TokenBatcher, make_batch
from nmt.base.errors import NmtError


def numbered(n: int, seed: int = 0):
    """Examples whose first source id (1000 + i) names them; lengths 1..30."""
    rng = random.Random(seed)
    return [([1000 + i] + [7] * rng.randint(0, 29), [8] * rng.randint(1, 30)) for i in range(n)]


def names(batches) -> list[int]:
    return [int(i) - 1000 for b in batches for i in b.src[:, 0]]


def test_make_batch_by_hand():
    batch = make_batch([([5, 6, 7], [8]), ([9], [10, 11])])
    assert batch.src.tolist() == [[5, 6, 7], [9, 0, 0]]                      # (2, 3)
    assert batch.tgt.tolist() == [[2, 8, 3, 0], [2, 10, 11, 3]]              # (2, 4): bos ... eos pad
    assert batch.src.dtype == batch.tgt.dtype == torch.long
    assert (batch.n_src_tokens, batch.n_tgt_tokens) == (4, 5)                # 3+1; (1+1)+(2+1) labels
    assert batch.tgt[:, :-1].tolist() == [[2, 8, 3], [2, 10, 11]]
    assert batch.tgt[:, 1:].tolist() == [[8, 3, 0], [10, 11, 3]]


def test_budget_respected_and_every_example_once():
    examples = numbered(500)
    batcher = TokenBatcher(examples, batch_tokens=128, shuffle=True, seed=1)
    batches = batcher.batches(0)
    for b in batches:
        assert len(b) * max(b.src.size(1), b.tgt.size(1)) <= 128
    assert sorted(names(batches)) == list(range(500))
    assert sum(b.n_src_tokens for b in batches) == sum(len(s) for s, _ in examples)
    assert sum(b.n_tgt_tokens for b in batches) == sum(len(t) + 1 for _, t in examples)


def test_long_sentence_gets_its_own_batch():
    examples = [([4] * 3, [5] * 3)] * 10 + [([4] * 50, [5] * 60)]
    batches = TokenBatcher(examples, batch_tokens=32, shuffle=False).batches(0)
    giant = [b for b in batches if b.tgt.size(1) == 62]
    assert len(giant) == 1 and len(giant[0]) == 1


def test_empty_source_gets_unk():
    batch = TokenBatcher([([], [5])], batch_tokens=16).batches(0)[0]
    assert batch.src.tolist() == [[1]]                  # <unk>: a real token, not padding


def test_deterministic_and_epochs_differ():
    batcher = TokenBatcher(numbered(400), batch_tokens=128, shuffle=True, seed=5)
    again = TokenBatcher(numbered(400), batch_tokens=128, shuffle=True, seed=5)
    first, second = batcher.batches(2), again.batches(2)
    assert len(first) == len(second)
    assert all(torch.equal(a.src, b.src) and torch.equal(a.tgt, b.tgt) for a, b in zip(first, second))
    assert names(batcher.batches(2)) != names(batcher.batches(3))
    assert names(TokenBatcher(numbered(400), 128, seed=6).batches(2)) != names(first)


def test_no_shuffle_is_the_same_every_epoch():
    batcher = TokenBatcher(numbered(200), batch_tokens=128, shuffle=False)
    assert names(batcher.batches(0)) == names(batcher.batches(7))


def test_ranks_are_disjoint_and_cover_the_epoch():
    batcher = TokenBatcher(numbered(300), batch_tokens=96, shuffle=True, seed=2)
    shares = [names(batcher.batches(4, rank=r, world_size=3)) for r in range(3)]
    flat = [i for share in shares for i in share]
    assert sorted(flat) == list(range(300))                # covering, and no example twice
    counts = [len(batcher.batches(4, rank=r, world_size=3)) for r in range(3)]
    assert max(counts) - min(counts) <= 1
    with pytest.raises(NmtError, match="rank=3"):
        batcher.batches(0, rank=3, world_size=3)


def test_padding_ratio_by_hand():
    # two sentences: src lengths 2 and 4, tgt rows 3 and 3; one batch (B=2, S=4, T+1=3)
    batcher = TokenBatcher([([4, 4], [5]), ([4, 4, 4, 4], [5])], batch_tokens=100, shuffle=False)
    # positions 2*4 + 2*3 = 14, real 2+4 + 3+3 = 12 -> padding 2/14
    assert batcher.padding_ratio() == pytest.approx(2 / 14)


def test_bad_budget():
    with pytest.raises(NmtError, match="batch_tokens=0"):
        TokenBatcher(numbered(3), batch_tokens=0)


def test_multi30k_padding_under_ten_percent(multi30k_de_en, multi30k_tokenizer):
    tok = multi30k_tokenizer
    examples = [(tok.encode_src(s), tok.encode_tgt(t)) for s, t in multi30k_de_en.train]
    batcher = TokenBatcher(examples, batch_tokens=4096, shuffle=True, seed=1)
    ratio = batcher.padding_ratio(0)
    print(f"Multi30k de-en, 8k joint unigram, 4096 tokens: padding {100 * ratio:.2f}%")
    assert ratio < 0.10
    batches = batcher.batches(1)
    assert all(len(b) * max(b.src.size(1), b.tgt.size(1)) <= 4096 for b in batches)
    assert sum(len(b) for b in batches) == 29000


def test_pad_to_multiple_pads_by_hand():
    batch = make_batch([([5, 6, 7], [8]), ([9], [10, 11])], pad_to_multiple=4)
    assert batch.src.tolist() == [[5, 6, 7, 0], [9, 0, 0, 0]]                  # S 3 -> 4
    assert batch.tgt.tolist() == [[2, 8, 3, 0, 0], [2, 10, 11, 3, 0]]          # T 3 -> 4, plus the shifted eos
    assert (batch.n_src_tokens, batch.n_tgt_tokens) == (4, 5)                  # real tokens only
    assert batch.tgt[:, :-1].size(1) == batch.tgt[:, 1:].size(1) == 4


@pytest.mark.parametrize("multiple", [1, 3, 8])
def test_pad_to_multiple_keeps_the_budget_on_padded_widths(multiple):
    batcher = TokenBatcher(numbered(500), batch_tokens=256, shuffle=True, seed=1, pad_to_multiple=multiple)
    batches = batcher.batches(0)
    for b in batches:
        assert b.src.size(1) % multiple == 0 and (b.tgt.size(1) - 1) % multiple == 0
        assert len(b) * max(b.src.size(1), b.tgt.size(1)) <= 256
    assert sorted(names(batches)) == list(range(500))


def test_pad_to_multiple_one_is_the_plain_plan_and_eight_gives_fewer_shapes():
    examples = numbered(2000)
    plain = TokenBatcher(examples, batch_tokens=512, shuffle=True, seed=3)
    assert TokenBatcher(examples, 512, True, 3, pad_to_multiple=1).plan(2) == plain.plan(2)
    bucketed = TokenBatcher(examples, 512, True, 3, pad_to_multiple=8)

    def shapes(batcher):
        return {(len(b), b.src.size(1), b.tgt.size(1)) for b in batcher.batches(0)}
    assert len(shapes(bucketed)) < len(shapes(plain)) / 2
    assert bucketed.padding_ratio(0) > plain.padding_ratio(0)          # the price, counted on padded widths


def test_pad_to_multiple_must_be_positive():
    with pytest.raises(NmtError, match=r"data.pad_to_multiple=0 must be a positive number"):
        TokenBatcher(numbered(5), 100, pad_to_multiple=0)


# data.sort_by: which length the examples are sorted by first

SHAPES = [(3, 9), (3, 2), (5, 5), (4, 8), (4, 3), (6, 2), (2, 7)]       # (source, target) lengths


def lengths_in_order(sort_by: str) -> list[tuple[int, int]]:
    examples = [([4] * s, [5] * t) for s, t in SHAPES]
    batcher = TokenBatcher(examples, batch_tokens=10**6, shuffle=False, sort_by=sort_by)
    (one_batch,) = batcher.plan(0)
    return [SHAPES[i] for i in one_batch]


def test_sort_by_source_then_target_by_hand():
    # source 2; source 3 (odd: targets down) 9, 2; source 4 (even: up) 3, 8; then 5, 6
    assert lengths_in_order("source") == [(2, 7), (3, 9), (3, 2), (4, 3), (4, 8), (5, 5), (6, 2)]


def test_sort_by_target_then_source_by_hand():
    # rows T+1 = t + 2: 4 (even: sources up) 3, 6; 5: (4, 3); 7: (5, 5); 9: (2, 7); 10: (4, 8); 11: (3, 9)
    assert lengths_in_order("target") == [(3, 2), (6, 2), (4, 3), (5, 5), (2, 7), (4, 8), (3, 9)]


def side_padding(batches) -> tuple[float, float]:
    """(source, target) padding shares of `batches`."""
    src = 1 - sum(int((b.src != 0).sum()) for b in batches) / sum(b.src.numel() for b in batches)
    tgt = 1 - sum(int((b.tgt != 0).sum()) for b in batches) / sum(b.tgt.numel() for b in batches)
    return src, tgt


def test_sort_by_target_moves_the_padding_to_the_source_side():
    by_source = TokenBatcher(numbered(2000), batch_tokens=600, seed=3).batches(0)
    by_target = TokenBatcher(numbered(2000), batch_tokens=600, seed=3, sort_by="target").batches(0)
    assert sorted(names(by_source)) == sorted(names(by_target)) == list(range(2000))
    assert all(len(b) * max(b.src.size(1), b.tgt.size(1)) <= 600 for b in by_target)
    src_pad, tgt_pad = side_padding(by_target)
    assert tgt_pad < 0.02 < src_pad                                       # targets nearly unpadded
    assert tgt_pad < side_padding(by_source)[1] / 5


def test_sort_by_source_is_the_default():
    assert TokenBatcher(numbered(50), batch_tokens=300).sort_by == "source"
    default, by_source = (TokenBatcher(numbered(50), 300, seed=4, **kw) for kw in ({}, {"sort_by": "source"}))
    assert default.plan(2) == by_source.plan(2)


def test_the_config_rule_offers_the_sort_keys_the_batcher_takes():
    from nmt.config_schema.table import RULES
    from nmt.data.batching import SORT_KEYS

    assert tuple(RULES["data.sort_by"].options) == SORT_KEYS


def test_an_unknown_sort_by_is_one_line():
    with pytest.raises(NmtError, match="data.sort_by='length' unknown; choose one of source, target"):
        TokenBatcher(numbered(3), batch_tokens=100, sort_by="length")
