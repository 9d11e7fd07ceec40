"""Luong's "concat" score: Bahdanau's family with one matrix.

Luong, Pham & Manning 2015, Effective Approaches to Attention-based Neural
Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3.1:

    score(h_t, h_s) = v_a . tanh(W_a [h_t; h_s])
"""

from torch import Tensor, nn

from nmt.core.attention.bahdanau import additive_score
from nmt.core.attention.base import Attention


class ConcatAttention(Attention):
    """Luong "concat" attention.

    W_a: (query_dim + key_dim) -> hidden_dim, v_a: hidden_dim. Splitting
    W_a = [W_q | W_k] gives W_a [h_t; h_s] = W_q h_t + W_k h_s, so prepare()
    returns W_k h_s once per sentence. Same family as Bahdanau's score, one
    matrix instead of two. No bias (the paper writes none).
    """

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 hidden_dim: int = 256, normaliser: str = "softmax"):
        super().__init__(query_dim, key_dim, scope, window, normaliser)
        self.w_a = nn.Linear(query_dim + key_dim, hidden_dim, bias=False)
        self.v_a = nn.Linear(hidden_dim, 1, bias=False)

    def prepare(self, keys: Tensor) -> Tensor:
        w_k = self.w_a.weight[:, self.query_dim:]                      # (A, Dk)
        return keys @ w_k.t()                                          # (B, S, A)

    def score(self, query: Tensor, prepared: Tensor) -> Tensor:
        w_q = self.w_a.weight[:, : self.query_dim]                    # (A, Dq)
        return additive_score(query @ w_q.t(), prepared, self.v_a.weight[0])  # (B, T, S)
