"""The k most probable next subwords at every step of an output, with their
probabilities, read from one teacher-forced pass over the chosen output
(after Seq2Seq-Vis, Strobelt et al. 2018, IEEE TVCG, whose decoder view
shows them at each step).

    p_t = softmax(logits_t)      the model's distribution before y_t,
                                 given the source and y_<t
    alternatives_t = the k largest p_t(w), with the probability and rank
                     of the chosen y_t

This is the model's own distribution: the search's rules on top of it (no
<pad> or <s>, no </s> before --min-length, a forced prefix) are not
applied, and a beam's choice at step t need not be p_t's most probable.
An ensemble's p_t is the mean of its models' (what its search uses).
"""

import torch
from torch import Tensor


def top_k(probs: Tensor, chosen: Tensor, k: int) -> list[dict]:
    """probs (T, V) rows summing to 1, chosen (T,) ids -> per row
    {"ids": [k ids], "p": [k probabilities, largest first],
     "chosen_p": p_t(y_t), "chosen_rank": 1 + how many ids are more probable}."""
    k = min(k, probs.shape[-1])
    values, ids = probs.float().topk(k, dim=-1)                      # (T, k)
    picked = probs.float().gather(1, chosen[:, None])                # (T, 1)
    ranks = (probs.float() > picked).sum(-1) + 1                     # (T,)
    return [{"ids": ids[t].tolist(), "p": values[t].tolist(), "chosen_p": float(picked[t, 0]),
             "chosen_rank": int(ranks[t])} for t in range(probs.shape[0])]


def mean_probabilities(logits: list[Tensor]) -> Tensor:
    """Each model's logits (T, V) -> the mean of their softmaxes (T, V)."""
    return torch.stack([x.float().softmax(-1) for x in logits]).mean(0)
