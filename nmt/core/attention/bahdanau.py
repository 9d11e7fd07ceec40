"""Bahdanau's additive (MLP) attention.

Bahdanau, Cho & Bengio 2015, Neural Machine Translation by Jointly Learning
to Align and Translate, ICLR, arXiv:1409.0473, Sec. 3.1 and App. A.1.2:

    e_ij = v_a . tanh(W_a s_{i-1} + U_a h_j)
    a_ij = softmax over real j of e_ij,   c_i = sum_j a_ij h_j

The query is s_{i-1}, the decoder state BEFORE it emits y_i: the context c_i
is computed first and then fed into the recurrence, s_i = f(s_{i-1}, y_{i-1},
c_i). That order is the decoder's (model.decoder.style=bahdanau in
nmt/core/rnn_decoder.py, whose step passes state["h"] as the query); with
style=luong the same score reads the new state s_i instead.
"""

import torch
from torch import Tensor, nn

from nmt.core.attention.base import Attention


def additive_score(query_part: Tensor, key_part: Tensor, v: Tensor) -> Tensor:
    """v . tanh(a + b) for every query/key pair.

    query_part (B, T, A) e.g. W_a s, key_part (B, S, A) e.g. U_a h, v (A,)
    -> (B, T, S).
    """
    hidden = torch.tanh(query_part[:, :, None, :] + key_part[:, None, :, :])  # (B, T, S, A)
    return hidden @ v                                                       # (B, T, S)


class AdditiveAttention(Attention):
    """Bahdanau (additive) attention, e_ij = v_a . tanh(W_a s_{i-1} + U_a h_j).

    W_a: query_dim -> hidden_dim, U_a: key_dim -> hidden_dim, v_a: hidden_dim.
    prepare() returns U_a h_j, computed once per sentence. No biases, as in
    the paper's equations. Which decoder state is the query (s_{i-1} or s_i)
    is the decoder's choice (model.decoder.style).
    """

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 hidden_dim: int = 256, normaliser: str = "softmax"):
        super().__init__(query_dim, key_dim, scope, window, normaliser)
        self.w_a = nn.Linear(query_dim, hidden_dim, bias=False)
        self.u_a = nn.Linear(key_dim, hidden_dim, bias=False)
        self.v_a = nn.Linear(hidden_dim, 1, bias=False)

    def prepare(self, keys: Tensor) -> Tensor:
        return self.u_a(keys)                                          # (B, S, A)

    def score(self, query: Tensor, prepared: Tensor) -> Tensor:
        return additive_score(self.w_a(query), prepared, self.v_a.weight[0])  # (B, T, S)
