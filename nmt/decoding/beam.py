"""Beam search, batched over sentences and beams, with incremental state."""

from dataclasses import dataclass, fields

import torch
from torch import Tensor

from nmt.decoding.greedy import Hypothesis, max_output_length


def length_penalty(lengths: Tensor, alpha: float) -> Tensor:
    """Wu et al. 2016, Google's NMT System, Sec. 7: lp(Y) = ((5 + |Y|) / 6) ** alpha.

    |Y| counts output tokens including eos; alpha = 0 turns the penalty off.
    """
    return ((5.0 + lengths.float()) / 6.0) ** alpha


COVERAGE_FLOOR = 1e-9   # min(coverage, 1) of a source token never attended (sparsemax): log stays finite


def coverage_penalty(coverage: Tensor, mask: Tensor, beta: float) -> Tensor:
    """Wu et al. 2016, Google's NMT System, Sec. 7:

        cp(X; Y) = beta * sum over source i of log(min(sum over t of a_t,i, 1.0))

    coverage (N, S) the summed attention sum_t a_t,i of each hypothesis,
    mask (N, S) bool True on real source tokens -> (N,), <= 0; beta = 0
    turns the penalty off. A source token with coverage exactly 0 (a sparse
    normaliser) counts as 1e-9 rather than -inf.
    """
    if beta == 0:
        return coverage.new_zeros(coverage.size(0))
    capped = coverage.float().clamp(min=COVERAGE_FLOOR, max=1.0).log()     # (N, S)
    return beta * capped.masked_fill(~mask, 0.0).sum(-1)


def _in_slots(N: int, active: Tensor, origin: Tensor, tokens: Tensor, weights: Tensor, eos: int):
    """One step's (origin, tokens, weights) over all N beam slots: the active
    slots' as decoded (origin as slots), an ended sentence's slots extended
    by eos from themselves with zero attention, so `backtrack` follows them."""
    slot_origin = torch.arange(N, device=active.device)
    slot_origin[active] = active[origin]
    slot_tokens = torch.full((N,), eos, dtype=tokens.dtype, device=tokens.device)
    slot_tokens[active] = tokens
    slot_weights = weights.new_zeros(N, weights.size(1))
    slot_weights[active] = weights
    return slot_origin, slot_tokens, slot_weights


def backtrack(steps: list) -> tuple[Tensor, Tensor]:
    """Each final beam's tokens (N, T) and attention (N, T, S), followed back
    through the steps' (origin, tokens, weights): at step t beam i extends
    beam origin[i] of step t - 1 by tokens[i], with the attention weights[origin[i]]
    its parent's decoder step reported. The search keeps only these
    back-pointers, so no step copies the histories."""
    origin, tokens, weights = steps[-1]
    N, S = weights.shape
    history = torch.empty(N, len(steps), dtype=torch.long, device=tokens.device)
    attention = torch.empty(N, len(steps), S, device=weights.device)
    rows = torch.arange(N, device=tokens.device)                          # (N,) beam at step t
    for t in range(len(steps) - 1, -1, -1):
        origin, tokens, weights = steps[t]
        parent = origin[rows]
        history[:, t] = tokens[rows]
        attention[:, t] = weights[parent]
        rows = parent
    return history, attention


@dataclass
class _Beams:
    """The beams of the sentences still decoded, one row per beam slot (n = W
    per sentence); `active` (n,) names each row's slot b*W + w among all B*W."""

    active: Tensor      # (n,) long
    scores: Tensor      # (n,) summed log-probability
    lengths: Tensor     # (n,) long, output tokens including eos
    finished: Tensor    # (n,) bool, has output eos
    coverage: Tensor    # (n, S) sum_t a_t
    limit: Tensor       # (n,) long, the most output tokens
    y: Tensor           # (n,) long, the last token, the next step's input

    def select(self, index: Tensor) -> "_Beams":
        """The rows `index` (n',) of every field."""
        return _Beams(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    def copy(self) -> "_Beams":
        return _Beams(**{f.name: getattr(self, f.name).clone() for f in fields(self)})


def _start(model, src: Tensor, bos: int, W: int, max_len_ratio: float, max_len_extra: int,
           max_len_cap: int | None, coverage: bool = True):
    """Encode src (B, S) once and give each sentence W beam slots: the memory
    and decoder state repeated to B*W rows, the beams (only the first of each
    sentence may extend: all W start identical), and src_len (B,). With
    `coverage` false the beams' coverage is (B*W, 0): nothing sums it."""
    B, S = src.shape
    memory, state = model.start(src)
    src_len = memory.mask[:, 0].sum(-1)                                   # (B,)
    expand = torch.arange(B, device=src.device).repeat_interleave(W)      # (B*W,)
    memory = memory.index_select(expand)
    state = model.decoder.reorder_state(state, expand)
    scores = torch.zeros(B, W, device=src.device)
    scores[:, 1:] = float("-inf")
    beams = _Beams(
        active=torch.arange(B * W, device=src.device),
        scores=scores.view(-1),                                           # (B*W,)
        lengths=torch.zeros(B * W, dtype=torch.long, device=src.device),
        finished=torch.zeros(B * W, dtype=torch.bool, device=src.device),
        coverage=torch.zeros(B * W, S if coverage else 0, device=src.device),   # (B*W, S) or (B*W, 0)
        limit=max_output_length(src_len, max_len_ratio, max_len_extra, max_len_cap)[expand],  # (B*W,)
        y=torch.full((B * W,), bos, dtype=torch.long, device=src.device),
    )
    return memory, state, beams, src_len


def force_prefix(log_probs: Tensor, t: int, prefix: list[int] | None) -> None:
    """While step t is inside the forced `prefix`, only its t-th token may be
    output, at the model's own log-probability (log_probs (n, V), in place)."""
    if prefix and t < len(prefix):
        forced = log_probs[:, prefix[t]].clone()                          # (n,)
        log_probs.fill_(float("-inf"))
        log_probs[:, prefix[t]] = forced


def _allowed(logits: Tensor, t: int, beams: _Beams, eos: int, never: tuple[int, ...] | Tensor,
             min_len: int, prefix: list[int] | None = None) -> Tensor:
    """logits (n, V) of step t -> the log-probabilities (n, V) each beam may
    extend by: never an id in `never`, no eos before `min_len` tokens, the
    prefix's token while a `prefix` is forced, only eos at the beam's length
    limit, and an ended beam only eos, at no cost."""
    log_probs = logits.float().log_softmax(-1)
    eos_score = log_probs[:, eos].clone()
    if len(never):
        log_probs.index_fill_(1, never if isinstance(never, Tensor) else torch.tensor(never), float("-inf"))
    if t < min_len:
        log_probs[:, eos] = float("-inf")
    force_prefix(log_probs, t, prefix)
    # rows by index, not by a boolean mask: masking rows of (n, V) costs a pass over it even
    # when no row is selected, which is most steps
    at_limit = ((t + 1 >= beams.limit) & ~beams.finished).nonzero().squeeze(1)   # (k,) rows
    if at_limit.numel():
        log_probs.index_fill_(0, at_limit, float("-inf"))
        log_probs[at_limit, eos] = eos_score[at_limit]
    ended = beams.finished.nonzero().squeeze(1)                                  # (k,) rows
    if ended.numel():
        log_probs.index_fill_(0, ended, float("-inf"))
        log_probs[ended, eos] = 0.0
    return log_probs


def _extend(beams: _Beams, log_probs: Tensor, weights: Tensor, W: int, eos: int, in_place: bool = False):
    """The W best extensions of each sentence's beams, over log_probs (n, V)
    and the step's attention weights (n, S): origin (n,) the row each new beam
    extends, tokens (n,) what it extends by, and the new beams. `in_place`:
    the candidates' scores are summed into log_probs (the same floats, no
    new (n, V) tensor), which the caller then no longer reads. A coverage of
    (n, 0) (nothing reads it) is carried as it is."""
    V = log_probs.size(-1)
    n_sent = log_probs.size(0) // W
    if in_place:
        candidates = log_probs.add_(beams.scores[:, None]).view(n_sent, W * V)   # (n/W, W*V)
    else:
        candidates = (beams.scores[:, None] + log_probs).view(n_sent, W * V)     # (n/W, W*V)
    top_scores, top_index = candidates.topk(W, dim=-1)                    # (n/W, W)
    offsets = (torch.arange(n_sent, device=log_probs.device) * W)[:, None]  # (n/W, 1)
    origin = (offsets + top_index // V).view(-1)                          # (n,)
    tokens = (top_index % V).view(-1)                                     # (n,)
    was_finished = beams.finished[origin]
    extended = _Beams(
        active=beams.active,
        scores=top_scores.view(-1),
        lengths=beams.lengths[origin] + (~was_finished).long(),
        finished=was_finished | (tokens == eos),
        coverage=_covered(beams.coverage, weights, origin, was_finished),
        limit=beams.limit,
        y=tokens,
    )
    return origin, tokens, extended


def _covered(coverage: Tensor, weights: Tensor, origin: Tensor, was_finished: Tensor) -> Tensor:
    """Each new beam's coverage (n, S): its parent's plus the step's attention,
    unless the parent had ended; a coverage of (n, 0) stays empty."""
    if coverage.size(1) == 0:
        return coverage
    return coverage[origin] + weights.float()[origin].masked_fill(was_finished[:, None], 0.0)


def _record(final: _Beams, beams: _Beams, rows: Tensor | None = None) -> None:
    """Copy the scores, lengths and coverage of the beams' `rows` (bool (n,),
    None: all) into their slots of `final`, the B*W beams the search ended with."""
    active = beams.active if rows is None else beams.active[rows]
    for key in ("scores", "lengths", "coverage"):
        value = getattr(beams, key)
        getattr(final, key)[active] = value if rows is None else value[rows]


def _ranked(final: _Beams, steps: list, source_mask: Tensor, src_len: Tensor, W: int, nbest: int,
            alpha: float, beta: float) -> list[list[Hypothesis]]:
    """Per sentence the `nbest` of its W final beams, best first by
    s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y); source_mask (B*W, S)."""
    B = src_len.size(0)
    normalised = final.scores / length_penalty(final.lengths, alpha)      # (B*W,)
    normalised = (normalised + coverage_penalty(final.coverage, source_mask, beta)).view(B, W)
    order = normalised.argsort(dim=-1, descending=True)
    history, attention = backtrack(steps)
    history, attention, lengths = history.tolist(), attention.cpu(), final.lengths.tolist()
    results = []
    for b in range(B):
        hyps = []
        for w in order[b, :nbest].tolist():
            i = b * W + w
            n = lengths[i] - 1                                            # tokens before eos
            hyps.append(Hypothesis(history[i][:n], float(normalised[b, w]),
                                   attention[i, : n + 1, : int(src_len[b])]))
        results.append(hyps)
    return results


@torch.no_grad()
def beam_search(model, src: Tensor, bos: int, eos: int, beam_size: int = 5, nbest: int = 1,
                alpha: float = 1.0, max_len_ratio: float = 1.5,
                max_len_extra: int = 10, max_len_cap: int | None = None,
                min_len: int = 0, never: tuple[int, ...] = (),
                beta: float = 0.0, prefix: list[int] | None = None,
                recorder=None) -> list[list[Hypothesis]]:
    """src (B, S) -> per sentence the `nbest` best hypotheses, best first.

    No hypothesis ends before `min_len` output tokens (eos is barred until
    then), unless its length limit comes first; the ids in `never` (pad,
    bos) are never output.

    Finished beams stay in the beam with their score frozen (they can only
    extend by eos at no cost), so the whole search is tensor operations; the
    final ranking is Wu et al.'s s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y):
    the length penalty (alpha) and the coverage penalty (beta, 0 = off).
    Like the length penalty, cp ranks the beam's final hypotheses; it does
    not prune during the search. Each hypothesis sums the attention its
    decoder reports at every step (an RNN's attention; a Transformer's
    cross-attention of model.decoder.attention_layer, by default the last,
    averaged over heads or the chosen attention_head; an ensemble's mean);
    the sum stops growing once the hypothesis has output eos. A sentence
    whose W beams have all ended leaves the batch.

    `prefix` (token ids) is forced at the start of every output, each token
    at its own log-probability, then the search goes on as usual. A
    `recorder` (nmt.decoding.beam_tree.BeamRecorder) is told every step's
    candidates and the final ranking; nothing it does feeds back.
    """
    W, never = beam_size, torch.tensor(never, dtype=torch.long, device=src.device)   # the barred ids, made once
    memory, state, beams, src_len = _start(model, src, bos, W, max_len_ratio, max_len_extra, max_len_cap,
                                           coverage=beta != 0 or recorder is not None)
    source_mask = memory.mask[:, 0]                                       # (B*W, S)
    final = beams.copy()   # each slot's scores, lengths, coverage once its sentence ends
    steps = []                          # per step: (origin (B*W,), tokens (B*W,), weights (B*W, S))
    if recorder is not None:
        recorder.start(final.active.numel(), W)
    for t in range(int(beams.limit.max())):
        logits, state, weights = model.decoder.step(beams.y, state, memory)  # (n, V), (n, S)
        log_probs = _allowed(logits, t, beams, eos, never, min_len, prefix)
        origin, tokens, extended = _extend(beams, log_probs, weights, W, eos, in_place=recorder is None)
        if recorder is not None:
            recorder.step(t, beams, log_probs, weights, origin, tokens, eos, src_len, W)
        beams = extended
        steps.append(_in_slots(final.active.numel(), beams.active, origin, tokens, weights.float(), eos))
        done = beams.finished.view(-1, W).all(-1)                         # (n/W,) sentences ended
        if bool(done.any()):
            rows = done.repeat_interleave(W)                              # (n,)
            _record(final, beams, rows)
            if bool(done.all()):
                break
            keep = (~rows).nonzero().squeeze(1)                           # (n',)
            beams, memory = beams.select(keep), memory.index_select(keep)
            origin = origin[keep]               # the beams' reorder and the batch's shrinking in one copy
        state = model.decoder.reorder_state(state, origin)
    else:                                       # the longest limit came before every sentence ended
        _record(final, beams)
    if recorder is not None:
        recorder.finish(final, source_mask, W, alpha, beta)
    return _ranked(final, steps, source_mask, src_len, W, nbest, alpha, beta)
