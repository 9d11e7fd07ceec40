"""Ensemble decoding: several models searched as one.

At every output step each model scores the next token given the same prefix,
and the ensemble's distribution is the mean of their probabilities,
p(y_t | y_<t, x) = (1/K) sum_k p_k(y_t | y_<t, x), the ensembles with which
Sutskever et al. 2014 and Luong et al. 2015 reported their best scores. The
models must share one vocabulary; their architectures may differ.

`Ensemble` offers what greedy and beam search use of a model (start,
decoder.step, decoder.reorder_state, memory.index_select, memory.mask), so
both searches run on it unchanged.
"""

import math

import torch
from torch import Tensor, nn


class EnsembleMemory:
    """One Memory per model, reordered together."""

    def __init__(self, memories: list):
        self.memories = memories

    @property
    def mask(self) -> Tensor:
        return self.memories[0].mask                                  # (B, 1, S), the same for all

    def index_select(self, index: Tensor) -> "EnsembleMemory":
        return EnsembleMemory([m.index_select(index) for m in self.memories])


class EnsembleDecoder:
    """Steps every model's decoder and averages their next-token probabilities."""

    def __init__(self, models: list):
        self.models = models

    def step(self, y_prev: Tensor, states: list, memory: EnsembleMemory):
        """y_prev (B,) -> log of the mean probability (B, V), new states, mean attention (B, S)."""
        log_probs, new_states, weights = [], [], []
        for model, state, mem in zip(self.models, states, memory.memories):
            logits, state, w = model.decoder.step(y_prev, state, mem)  # (B, V), (B, S)
            log_probs.append(logits.float().log_softmax(-1))
            new_states.append(state)
            weights.append(w.float())
        mixed = torch.logsumexp(torch.stack(log_probs), 0) - math.log(len(log_probs))  # (B, V)
        return mixed, new_states, torch.stack(weights).mean(0)

    def reorder_state(self, states: list, index: Tensor) -> list:
        return [m.decoder.reorder_state(s, index) for m, s in zip(self.models, states)]


class Ensemble(nn.Module):
    """Models decoded together; the attention it reports is the mean of theirs."""

    def __init__(self, models: list):
        super().__init__()
        if len(models) < 2:
            raise ValueError("an ensemble needs at least two models")
        self.members = list(models)
        for i, model in enumerate(models):      # so .to() and .eval() reach every model
            if isinstance(model, nn.Module):
                self.add_module(f"member_{i}", model)
        self.decoder = EnsembleDecoder(self.members)

    def start(self, src: Tensor):
        """src (B, S) -> (EnsembleMemory, one decoder state per model)."""
        starts = [model.start(src) for model in self.members]
        return EnsembleMemory([m for m, _ in starts]), [s for _, s in starts]
