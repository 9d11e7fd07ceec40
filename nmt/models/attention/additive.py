"""Additive (MLP) scores: Bahdanau's and Luong's "concat"."""

from torch import Tensor, nn

from nmt.models.attention.base import Attention
from nmt.models.attention.scores import additive_score


class AdditiveAttention(Attention):
    """Bahdanau (additive) attention.

    Bahdanau, Cho & Bengio 2015, Neural Machine Translation by Jointly
    Learning to Align and Translate, ICLR, arXiv:1409.0473, Sec. 3.1 and
    App. A.1.2:

        e_ij = v_a . tanh(W_a s_{i-1} + U_a h_j)
        a_ij = softmax over real j of e_ij,   c_i = sum_j a_ij h_j

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


class ConcatAttention(Attention):
    """Luong "concat" attention.

    Luong, Pham & Manning 2015, Effective Approaches to Attention-based
    Neural Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3.1:

        score(h_t, h_s) = v_a . tanh(W_a [h_t; h_s])

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
