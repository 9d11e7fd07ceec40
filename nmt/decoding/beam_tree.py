"""What a beam search considered, step by step: the tree Seq2Seq-Vis draws.

Strobelt, Gehrmann, Behrisch, Perer, Pfister & Rush 2018, Seq2Seq-Vis: A
Visual Debugging Tool for Sequence-to-Sequence Models, IEEE VIS,
arXiv:1804.09299, Sec. 4 (the beam search view).

`beam_search(..., recorder=BeamRecorder())` fills it; the search itself reads
nothing back, so its hypotheses, scores and attention are the same with and
without a recorder. Each step adds one node per hypothesis the beam kept
(state "kept", or "finished" when it ended with eos) and one per candidate
among the next `pruned` best outside the beam (state "pruned"); a beam that
had already ended is carried over unchanged, so it adds no node. Every node
holds its parent, token, the token's log-probability, the prefix's summed
log-probability and the attention row of the decoder step that chose it.
`finish` adds the W final hypotheses with what ranked them (Wu et al. 2016):

    score(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y)
"""

from dataclasses import dataclass, field

import torch
from torch import Tensor

from nmt.core.penalties import coverage_penalty, length_penalty


@dataclass
class BeamNode:
    id: int
    parent: int | None
    step: int                   # 0: the root (bos); k: the k-th output token
    token: int | None
    log_prob: float             # log P(token | prefix); 0 at the root
    score: float                # log P(prefix), summed
    state: str                  # "root", "kept", "finished" or "pruned"
    attention: list[float] = field(default_factory=list)   # (S,) the attention that chose the token


@dataclass
class BeamFinal:
    node: int                   # the node the hypothesis ends at
    sentence: int
    log_prob: float             # log P(Y | X)
    length: int                 # |Y|, eos included
    length_penalty: float       # lp(Y)
    coverage_penalty: float     # cp(X; Y)
    score: float                # log P / lp + cp: what ranked the finals
    rank: int                   # 1 = the search's answer


class BeamRecorder:
    """The tree of one beam search (every sentence of its batch); `pruned`
    candidates per sentence and step are kept beyond the beam, best first."""

    def __init__(self, pruned: int | None = None):
        self.pruned = pruned
        self.nodes: list[BeamNode] = []
        self.finals: list[BeamFinal] = []
        self.slot_node: dict[int, int | None] = {}   # beam slot b*W + w -> its hypothesis' node

    def _add(self, parent, step, token, log_prob, score, state, attention) -> int:
        self.nodes.append(BeamNode(len(self.nodes), parent, step, token, log_prob, score, state, attention))
        return len(self.nodes) - 1

    def start(self, slots: int, W: int) -> None:
        """One root per sentence; every slot of it starts there."""
        for b in range(slots // W):
            root = self._add(None, 0, None, 0.0, 0.0, "root", [])
            for w in range(W):
                self.slot_node[b * W + w] = root

    @torch.no_grad()
    def step(self, t: int, beams, log_probs: Tensor, weights: Tensor, origin: Tensor, tokens: Tensor,
             eos: int, src_len: Tensor, W: int) -> None:
        """Step t: beams (the rows before it), log_probs (n, V) and weights
        (n, S) it extended them by, origin and tokens (n,) what it kept."""
        V = log_probs.size(-1)
        candidates = (beams.scores[:, None] + log_probs.float()).view(-1, W * V)    # (n/W, W*V)
        k = min(W + (W if self.pruned is None else self.pruned), W * V)
        top_scores, top_index = candidates.topk(k, dim=-1)                         # (n/W, k)
        active, finished = beams.active.tolist(), beams.finished.tolist()
        kept = set(zip(origin.tolist(), tokens.tolist()))
        before = dict(self.slot_node)
        for row, (parent_row, token) in enumerate(zip(origin.tolist(), tokens.tolist())):
            parent = before[active[parent_row]]
            if finished[parent_row] or parent is None:       # an ended beam carried over, or a dead one
                self.slot_node[active[row]] = parent if finished[parent_row] else None
                continue
            S = int(src_len[active[parent_row] // W])
            self.slot_node[active[row]] = self._node(t, parent, parent_row, token, log_probs, candidates,
                                                     weights, S, W, eos, "kept")
        for sentence, (scores, index) in enumerate(zip(top_scores.tolist(), top_index.tolist())):
            for score, flat in zip(scores, index):
                parent_row, token = sentence * W + flat // V, flat % V
                parent = before[active[parent_row]]
                if (parent_row, token) in kept or finished[parent_row] or parent is None or score == float("-inf"):
                    continue
                S = int(src_len[active[parent_row] // W])
                self._node(t, parent, parent_row, token, log_probs, candidates, weights, S, W, eos, "pruned")

    def _node(self, t, parent, row, token, log_probs, candidates, weights, S, W, eos, state) -> int | None:
        """A node for extending row `row` by `token` (None: a candidate of score -inf)."""
        score = float(candidates[row // W, (row % W) * log_probs.size(-1) + token])
        if score == float("-inf"):
            return None
        if state == "kept" and token == eos:
            state = "finished"
        attention = [round(w, 4) for w in weights[row, :S].float().tolist()]
        return self._add(parent, t + 1, token, float(log_probs[row, token]), score, state, attention)

    @torch.no_grad()
    def finish(self, final, source_mask: Tensor, W: int, alpha: float, beta: float) -> None:
        """The W final hypotheses of each sentence, ranked as the search ranks them."""
        lp = length_penalty(final.lengths, alpha)                                  # (B*W,)
        cp = coverage_penalty(final.coverage, source_mask, beta)                   # (B*W,)
        normalised = final.scores / lp                                             # as _ranked computes it
        normalised = (normalised + cp).view(-1, W)                                 # (B, W)
        order = normalised.argsort(dim=-1, descending=True).tolist()
        for b, ranking in enumerate(order):
            for rank, w in enumerate(ranking, 1):
                i = b * W + w
                node = self.slot_node.get(i)
                if node is None or float(final.scores[i]) == float("-inf"):
                    continue
                self.finals.append(BeamFinal(node, b, float(final.scores[i]), int(final.lengths[i]),
                                             float(lp[i]), float(cp[i]), float(normalised[b, w]), rank))
