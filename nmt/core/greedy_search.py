"""Greedy search: at each step the single most probable next token.

Sutskever, Vinyals & Le 2014, Sequence to Sequence Learning with Neural
Networks, NeurIPS, Sec. 3.2 (a beam of size 1, which "performs well"):

    y_t = argmax over v of log p(v | y_<t, x)          until y_t = </s>
    score(Y) = sum over t of log p(y_t | y_<t, x)       </s> included

Batched over sentences, with the decoder's incremental state
(`decoder.step(y_prev, state, memory) -> (logits, state, weights)`, the same
for every decoder); a sentence that has output </s> leaves the batch. The
length limit is nmt.core.length_limit's: </s> is forced at it, at its own
log-probability.
"""

from typing import NamedTuple

import torch
from torch import Tensor

from nmt.core.length_limit import MAX_LEN_EXTRA, MAX_LEN_RATIO, max_output_length


class Hypothesis(NamedTuple):
    tokens: list[int]        # without bos and eos
    score: float             # sum of log-probabilities (incl. eos)
    attention: Tensor        # (T, S) attention of each output token, T = len(tokens) + 1


@torch.no_grad()
def greedy_search(model, src: Tensor, bos: int, eos: int, max_len_ratio: float = MAX_LEN_RATIO,
                  max_len_extra: int = MAX_LEN_EXTRA, max_len_cap: int | None = None,
                  min_len: int = 0, never: tuple[int, ...] = (),
                  prefix: list[int] | None = None) -> list[Hypothesis]:
    """src (B, S) -> one Hypothesis per sentence, in order.

    No sentence ends before `min_len` output tokens (eos is barred until then),
    unless its length limit comes first; the ids in `never` (pad, bos) are
    never output. Scores stay the model's own log-probabilities. `prefix`
    (token ids) is forced at the start of every output, then the search
    goes on from it (what if the translation started so?)."""
    memory, state = model.start(src)
    B = src.size(0)
    src_len = memory.mask[:, 0].sum(-1)                             # (B,)
    limit = max_output_length(src_len, max_len_ratio, max_len_extra, max_len_cap)  # (B,)
    y = torch.full((B,), bos, dtype=torch.long, device=src.device)
    scores = torch.zeros(B, device=src.device)                      # (n,) sums of the sentences decoded
    final = torch.zeros(B, device=src.device)                       # (B,) scores of ended sentences
    active = torch.arange(B, device=src.device)     # the sentences still decoded; ended ones leave the batch
    tokens, weights = [], []                        # per step, over all B: eos and zeros once ended
    for t in range(int(limit.max())):
        logits, state, w = model.decoder.step(y, state, memory)     # (n, V), (n, S)
        log_probs = logits.float().log_softmax(-1)
        eos_score = log_probs[:, eos].clone()                       # (n,)
        log_probs[:, list(never)] = float("-inf")                  # e.g. pad and bos: never an output
        if t < min_len:
            log_probs[:, eos] = float("-inf")
        if prefix and t < len(prefix):                              # forced, at its own log P
            y = torch.full_like(log_probs[:, 0], prefix[t], dtype=torch.long)
        else:
            y = log_probs.argmax(-1)                                # (n,)
        at_limit = t + 1 >= limit
        y = torch.where(at_limit, torch.full_like(y, eos), y)      # force eos at the limit
        step_score = torch.where(at_limit, eos_score, log_probs.gather(1, y[:, None])[:, 0])
        scores += step_score
        step_tokens = torch.full((B,), eos, dtype=torch.long, device=src.device)
        step_tokens[active] = y
        step_weights = w.new_zeros(B, w.size(1))
        step_weights[active] = w
        tokens.append(step_tokens)
        weights.append(step_weights)
        done = y == eos                                             # (n,)
        if bool(done.any()):
            final[active[done]] = scores[done]
            if bool(done.all()):
                break
            keep = (~done).nonzero().squeeze(1)                     # (n',)
            active, memory, limit = active[keep], memory.index_select(keep), limit[keep]
            state = model.decoder.reorder_state(state, keep)
            scores, y = scores[keep], y[keep]
    tokens_bt = torch.stack(tokens, 1).tolist()                    # (B, T)
    weights_bts = torch.stack(weights, 1).float().cpu()             # (B, T, S)
    out = []
    for b in range(B):
        seq = tokens_bt[b]
        n = seq.index(eos) if eos in seq else len(seq)
        out.append(Hypothesis(seq[:n], float(final[b]), weights_bts[b, : n + 1, : int(src_len[b])]))
    return out
