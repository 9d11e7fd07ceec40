"""Greedy search, batched, with the decoder's incremental state."""

from typing import NamedTuple

import torch
from torch import Tensor


class Hypothesis(NamedTuple):
    tokens: list[int]        # without bos and eos
    score: float             # sum of log-probabilities (incl. eos)
    attention: Tensor        # (T, S) attention of each output token, T = len(tokens) + 1


def max_output_length(src_lengths: Tensor, ratio: float, extra: int, cap: int | None = None) -> Tensor:
    """Longest output allowed per sentence: ratio * source length + extra,
    at most `cap` (a learned position table's size)."""
    limit = (src_lengths.float() * ratio).long() + extra
    return limit.clamp(max=cap) if cap else limit


@torch.no_grad()
def greedy_search(model, src: Tensor, bos: int, eos: int, max_len_ratio: float = 1.5,
                  max_len_extra: int = 10, max_len_cap: int | None = None,
                  min_len: int = 0, never: tuple[int, ...] = (),
                  prefix: list[int] | None = None) -> list[Hypothesis]:
    """src (B, S) -> one Hypothesis per sentence, in order.

    No sentence ends before `min_len` output tokens (eos is barred until then),
    unless its length limit comes first; the ids in `never` (pad, bos) are
    never output. Scores stay the model's own log-probabilities. `prefix`
    (token ids) is forced at the start of every output, then the search
    goes on from it (what if the translation started so?)."""
    memory, state = model.start(src)
    B, S = src.shape
    src_len = memory.mask[:, 0].sum(-1)                             # (B,)
    limit = max_output_length(src_len, max_len_ratio, max_len_extra, max_len_cap)  # (B,)
    y = torch.full((B,), bos, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    scores, final = torch.zeros(B, device=src.device), torch.zeros(B, device=src.device)  # final: of ended sentences
    active = torch.arange(B, device=src.device)     # the sentences still decoded; ended ones leave the batch
    tokens, weights = [], []                        # per step, over all B: eos and zeros once ended
    barred = torch.tensor(never, dtype=torch.long, device=src.device)   # made once; none: index_fill_ fills nothing
    for t in range(int(limit.max())):
        logits, state, w = model.decoder.step(y, state, memory)   # (n, V), (n, S)
        log_probs = logits.float().log_softmax(-1)
        eos_score = log_probs[:, eos].clone()                       # (n,)
        log_probs.index_fill_(1, barred, float("-inf"))            # e.g. pad and bos: never an output
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
    scores = final
    tokens_bt = torch.stack(tokens, 1).tolist()                    # (B, T)
    weights_bts = torch.stack(weights, 1).float().cpu()             # (B, T, S)
    out = []
    for b in range(B):
        seq = tokens_bt[b]
        n = seq.index(eos) if eos in seq else len(seq)
        out.append(Hypothesis(seq[:n], float(scores[b]), weights_bts[b, : n + 1, : int(src_len[b])]))
    return out
