"""What a Hugging Face model's beam search considered: the tree Seq2Seq-Vis draws.

Strobelt, Gehrmann, Behrisch, Perer, Pfister & Rush 2018, Seq2Seq-Vis: A
Visual Debugging Tool for Sequence-to-Sequence Models, IEEE VIS,
arXiv:1804.09299, Sec. 4 (the beam search view).

`generate()` runs its own search; `StepLog`, a LogitsProcessor placed last
in its list, sees at every step the running hypotheses (n, t) and the
log-probabilities the search ranks them by (n, V), after the model's own
processors (forced eos, minimum length), and returns them unchanged, so the
search is the same with and without it. `build_tree` replays the step rule
of transformers' beam search on those numbers (the 2W best continuations of
all beams; of the best W, those ending in eos finish; the best W that do not
end run on) into nmt's BeamNode and BeamFinal (nmt.decoding.beam_tree), and
checks the replay against the next step's running hypotheses and against
the sequences generate() returned: a transformers release whose search
differs is one NmtError, never a wrong tree. A final is ranked as generate()
ranks it:

    score(Y, X) = log P(Y | X) / |Y|^length_penalty

over the generated tokens (a forced prefix is given, not scored).
"""

import torch

from nmt.decoding.beam_tree import BeamFinal, BeamNode
from nmt.base.errors import NmtError

MISMATCH = ("the beam tree of {name} does not match its generate() ({what}); this transformers release "
            "searches differently from the one nmt's replay follows")


class StepLog:
    """A LogitsProcessor (duck-typed: generate() calls it) that keeps each step's
    running sequences and log-probabilities and changes nothing."""

    def __init__(self):
        self.steps: list[tuple[torch.Tensor, torch.Tensor]] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.steps.append((input_ids.detach().cpu().clone(), scores.detach().float().cpu().clone()))
        return scores


class HFBeamTree:
    """The tree of one sentence's beam search (the BeamRecorder's `nodes` and `finals`)."""

    ranking = "generate"

    def __init__(self):
        self.nodes: list[BeamNode] = []
        self.finals: list[BeamFinal] = []
        self.by_prefix: dict[tuple[int, ...], int] = {}

    def add(self, prefix: tuple, parent, token, log_prob: float, score: float, state: str, attention) -> int:
        node = BeamNode(len(self.nodes), parent, len(prefix), token, log_prob, score, state, attention)
        self.nodes.append(node)
        if state != "pruned":
            self.by_prefix[prefix] = node.id
        return node.id


def _row(attention: torch.Tensor, S: int) -> list[float]:
    return [round(w, 4) for w in attention[:S].float().tolist()]


def build_tree(name: str, log: StepLog, out, forced: list[int], forced_logp: list[float],
               forced_attention: torch.Tensor, beam_size: int, length_penalty: float, eos: set[int],
               max_new_tokens: int, pruned: int, S: int) -> HFBeamTree:
    """Replay `log` (one sentence, beam `beam_size`) into a tree.

    out: generate()'s output with return_dict_in_generate, output_attentions
    and num_return_sequences=beam_size. forced: the forced prefix's token ids,
    forced_logp and forced_attention ((len(forced), S)) their teacher-forced
    log-probabilities and last-layer cross-attention rows (mean over heads)."""
    W = beam_size
    tree = HFBeamTree()
    parent = tree.add((), None, None, 0.0, 0.0, "root", [])
    base = 0.0                                         # log P of the forced prefix
    for k, (token, logp) in enumerate(zip(forced, forced_logp)):
        base += logp
        parent = tree.add(tuple(forced[:k + 1]), parent, token, logp, base, "forced", _row(forced_attention[k], S))
    running = torch.tensor([0.0] + [-1e9] * (W - 1))  # generate()'s running scores at its first step
    expected: set | None = None
    for t, (sequences, log_probs) in enumerate(log.steps):
        prefixes = [tuple(row[1:].tolist()) for row in sequences]                  # forced + generated
        if expected is not None and set(prefixes) != expected:
            raise NmtError(MISMATCH.format(name=name, what=f"the hypotheses running at step {t + 1}"))
        cross = out.cross_attentions[t][-1][:, :, -1].mean(1)                        # (n, S): last layer
        kept = _replay_step(tree, prefixes, running, log_probs, cross[:, :S], W, eos, t + 1 >= max_new_tokens,
                            pruned, base)
        running = torch.tensor([score for _, score in kept] + [-1e9] * (W - len(kept)))
        expected = {prefix for prefix, _ in kept} if len(kept) == W else None   # else filled by finished rows
    _add_finals(tree, name, out, tuple(forced), base, eos, length_penalty)
    return tree


def _replay_step(tree: HFBeamTree, prefixes: list[tuple], running: torch.Tensor, log_probs: torch.Tensor,
                 cross: torch.Tensor, W: int, eos: set[int], last_step: bool, pruned: int,
                 base: float) -> list[tuple[tuple, float]]:
    """One step of generate()'s beam: its nodes added to `tree` -> the (prefix,
    score) of the hypotheses that run on, best first. running (n,) the rows'
    scores, log_probs (n, V), cross (n, S); `last_step`: the length limit ends
    every continuation."""
    V = log_probs.size(-1)
    candidates = (running[:, None] + log_probs).view(-1)                             # (n*V,) as generate() adds
    scores, index = candidates.topk(min(3 * W + pruned, candidates.numel()))
    kept, shown_pruned = [], 0
    for rank, (score, flat) in enumerate(zip(scores.tolist(), index.tolist())):
        if score < -1e8:                     # a row generate() keeps only to fill its beam
            break
        row, token = divmod(flat, V)
        stops = token in eos or last_step
        if rank < W and stops:                                   # of the best W, an ended one finishes
            state = "finished"
        elif rank < 2 * W and not stops and len(kept) < W:      # of the best 2W, W that did not end run on
            state = "kept"
        elif shown_pruned < pruned:
            state, shown_pruned = "pruned", shown_pruned + 1
        else:
            continue
        prefix = prefixes[row] + (token,)
        tree.add(prefix, tree.by_prefix[prefixes[row]], token, float(log_probs[row, token]), base + score,
                 state, _row(cross[row], cross.size(-1)))
        if state == "kept":
            kept.append((prefix, score))
    return kept


def _add_finals(tree: HFBeamTree, name: str, out, forced: tuple, base: float, eos: set[int],
                length_penalty: float) -> None:
    """generate()'s returned sequences as the tree's finals, each checked against the replay."""
    P = 1 + len(forced)                                      # the decoder prompt: start token and prefix
    for rank, (sequence, score) in enumerate(zip(out.sequences.tolist(), out.sequences_scores.tolist()), 1):
        generated = sequence[P:]
        ends = [i for i, token in enumerate(generated) if token in eos]
        if ends:
            generated = generated[:ends[0] + 1]
        node = tree.by_prefix.get(forced + tuple(generated))
        if node is None:
            raise NmtError(MISMATCH.format(name=name, what=f"its final #{rank} is not in the tree"))
        log_prob = tree.nodes[node].score - base
        lp = float(len(generated)) ** length_penalty
        if abs(log_prob / lp - score) > 1e-3 * max(1.0, abs(score)):
            raise NmtError(MISMATCH.format(name=name, what=f"final #{rank} scores {score:.4f}, the replay "
                                                           f"{log_prob / lp:.4f}"))
        tree.finals.append(BeamFinal(node, 0, log_prob, len(generated), lp, 0.0, score, rank))
