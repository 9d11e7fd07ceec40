"""A model whose next-token probabilities are a fixed table, for hand-checked search."""

import torch

from nmt.core.outputs import Memory

PAD, UNK, BOS, EOS, A, B, C, D, X = range(9)
V = 9


def transition_table() -> torch.Tensor:
    """(V, V) probability of the next token given the last one."""
    table = torch.full((V, V), 1e-9)
    table[BOS, A], table[BOS, B], table[BOS, EOS] = 0.5, 0.4, 0.1
    table[A, EOS], table[A, X] = 0.8, 0.2
    table[B, C], table[B, D] = 0.9, 0.1
    table[C, EOS] = 1.0
    table[D, EOS] = 1.0
    table[X, EOS] = 1.0
    for row in (PAD, UNK, EOS):
        table[row, EOS] = 1.0
    return table / table.sum(-1, keepdim=True)


def attention_table() -> torch.Tensor:
    """(V, 3) attention over a 3-token source at the step whose input is the
    row's token (uniform for the tokens not listed)."""
    table = torch.full((V, 3), 1 / 3)
    table[BOS] = torch.tensor([0.8, 0.1, 0.1])
    table[A] = torch.tensor([0.8, 0.1, 0.1])      # a </s>:   sum = (1.6, 0.2, 0.2)
    table[B] = torch.tensor([0.05, 0.9, 0.05])    # b c </s>: sum = (0.9, 1.05, 1.05)
    table[C] = torch.tensor([0.05, 0.05, 0.9])
    return table


class TableDecoder:
    def __init__(self, attention: torch.Tensor | None = None):
        self.log_table = transition_table().log()
        self.attention = attention

    def step(self, y_prev, state, memory):
        real = memory.mask[:, 0].float()                                 # (B, S)
        if self.attention is not None:                                   # per input token, renormalised
            real = real * self.attention[y_prev][:, : real.size(1)]
        weights = real / real.sum(-1, keepdim=True)
        return self.log_table[y_prev], state, weights

    def reorder_state(self, state, index):
        return state.index_select(0, index)


class TableModel:
    """Implements the two things search needs: start() and decoder.step()."""

    def __init__(self, attention: torch.Tensor | None = None):
        self.decoder = TableDecoder(attention)

    def start(self, src):
        mask = (src != PAD)[:, None, :]
        memory = Memory(torch.zeros(src.size(0), src.size(1), 1), mask)
        return memory, torch.zeros(src.size(0), dtype=torch.long)
