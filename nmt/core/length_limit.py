"""How long an output may grow: a limit on the decoding steps, from the source's length.

nmt's own rule (no paper fixes one; a search needs one so that a model that
never outputs </s> still stops):

    limit(S) = min(int(ratio * S) + extra, cap)      output tokens, </s> included

S the source's real subwords, ratio = MAX_LEN_RATIO = 1.5 and extra =
MAX_LEN_EXTRA = 10 by default (the translators' defaults and the trainer's
validation search), cap a learned position table's size (None: no cap).
Greedy and beam search force </s> at the limit, so an output has at most
limit(S) - 1 subwords. ratio * S is computed in float32 and truncated.

The file imports nothing (tensor methods only): the CTranslate2 route reads
its defaults without loading torch.
"""

MAX_LEN_RATIO = 1.5       # output tokens per source subword
MAX_LEN_EXTRA = 10        # and this many more


def max_output_length(src_lengths, ratio: float = MAX_LEN_RATIO, extra: int = MAX_LEN_EXTRA,
                      cap: int | None = None):
    """src_lengths (B,) long tensor -> limit(S) (B,) long: the most output tokens, </s> included."""
    limit = (src_lengths.float() * ratio).long() + extra      # (B,)
    return limit.clamp(max=cap) if cap else limit
