"""What a search may output, and the settings under which it cannot.

The length limit of one sentence is `max_output_length` (greedy.py): at most
ratio * S + extra tokens, </s> included, capped by a learned position table;
</s> is forced at the limit and barred before `min_length` subwords. So a
source of S subwords gets at most

    longest(S) = min(int(ratio * S) + extra, cap) - 1    subwords before </s>

and a search under settings with longest(1) < 1 (a short sentence gets no
subword) or min_length > longest(max_src_len) (no sentence can reach the
minimum) answers with nothing, or with outputs cut at the limit, without a
word. `check_search_limits` is the one rule that refuses such settings before
decoding; `Translator` calls it when it is built and for every translate()
call, so nmt.translate, the Python API, the trainer's validation and the
explorer all go through it.
"""

import math
import numbers

import torch

from nmt.decoding.greedy import max_output_length
from nmt.base.errors import NmtError

MAX_LEN_RATIO, MAX_LEN_EXTRA = 1.5, 10     # Translator's defaults: the trainer's validation search
MOST_EXTRA, MOST_RATIO = 2**31 - 1, 1000.0   # past these only the step cap limits an output; 2^64 overflowed int64
STEP_CAP_RATIO = 4          # no position table: at most 4 * max_src_len + MAX_LEN_EXTRA decoding steps


def decode_step_cap(max_src_len: int, max_tgt_len: int | None = None) -> int:
    """The most decoding steps (</s> included) any search of this model may take:
    a learned position table's size, else STEP_CAP_RATIO times the longest
    source the model takes (data.max_len, from the checkpoint) + MAX_LEN_EXTRA.
    Without it, an RNN under --max-length-extra 1000000000 --min-length 100000
    would decode for minutes."""
    return int(max_tgt_len) if max_tgt_len else STEP_CAP_RATIO * int(max_src_len) + MAX_LEN_EXTRA


def longest_output(src_len: int, ratio: float, extra: int, cap: int | None = None) -> int:
    """Subwords before </s> a source of `src_len` subwords may get (as the searches count)."""
    return int(max_output_length(torch.tensor([src_len]), ratio, extra, cap)[0]) - 1


def check_search_limits(max_src_len: int, max_len_ratio: float, max_len_extra: int,
                        max_tgt_len: int | None = None, min_length: int = 0) -> None:
    """NmtError when no hypothesis can end with a real output under these
    settings: a length limit that leaves a one-subword sentence no subword, or
    a `min_length` above the longest output any source may get."""
    if isinstance(max_len_ratio, bool) or not isinstance(max_len_ratio, numbers.Real) or \
            not math.isfinite(max_len_ratio) or max_len_ratio < 0:
        raise NmtError(f"max_len_ratio={max_len_ratio!r} (--max-length-ratio) must be a finite number >= 0")
    if isinstance(max_len_extra, bool) or not isinstance(max_len_extra, numbers.Integral) or max_len_extra < 0:
        raise NmtError(f"max_len_extra={max_len_extra!r} (--max-length-extra) must be a whole number >= 0")
    if max_len_ratio > MOST_RATIO:
        raise NmtError(f"max_len_ratio={max_len_ratio:g} (--max-length-ratio) must be at most {MOST_RATIO:g}: an "
                       "output is capped by the model's decoding steps long before")
    if max_len_extra > MOST_EXTRA:
        raise NmtError(f"max_len_extra={max_len_extra} (--max-length-extra) must be at most {MOST_EXTRA:,}: an "
                       "output is capped by the model's decoding steps long before")
    limits = f"max_len_ratio={max_len_ratio:g} x S source subwords + max_len_extra={max_len_extra}" + \
        (f", at most the model's {max_tgt_len} decoding steps" if max_tgt_len else "") + ", minus 1 for </s>"
    shortest = longest_output(1, max_len_ratio, max_len_extra, max_tgt_len)
    if shortest < 1:
        needed = max_len_extra + 1 - shortest
        raise NmtError(f"a one-subword sentence could get no output subword ({limits} = {shortest}); "
                       f"raise max_len_extra (--max-length-extra) to {needed} or more")
    longest = longest_output(max_src_len, max_len_ratio, max_len_extra, max_tgt_len)
    if min_length > longest:
        raise NmtError(f"min_length={min_length} (--min-length) is more than any output may have: at "
                       f"most {longest} subwords for the longest source of {max_src_len} ({limits}), so no "
                       f"hypothesis could end by itself; lower it to {longest} or less, or raise "
                       "max_len_ratio / max_len_extra (--max-length-ratio, --max-length-extra)")
