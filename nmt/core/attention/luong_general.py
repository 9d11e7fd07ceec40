"""Luong's "general" (bilinear) score.

Luong, Pham & Manning 2015, Effective Approaches to Attention-based Neural
Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3.1:

    score(h_t, h_s) = h_t . (W_a h_s)
"""

from torch import Tensor, nn

from nmt.core.attention.base import Attention
from nmt.core.attention.luong_dot import dot_score
from nmt.core.attention.scaled_dot import scaled_dot_score


class GeneralAttention(Attention):
    """Luong "general" attention.

    W_a: key_dim -> query_dim, no bias (as in the paper). prepare() returns
    W_a h_s, computed once per sentence.

    scaled=True (model.attention.scaled) divides the score by sqrt(d),
    d = query_dim, as Vaswani et al. 2017 (Sec. 3.2.1) scale the dot product:

        score(h_t, h_s) = h_t . (W_a h_s) / sqrt(d)

    Not in Luong et al.; it keeps the bilinear score's variance near 1 when
    h_t and W_a h_s have unit-variance entries, so that softmax does not
    saturate from the start (the study's "scaled general" row).
    """

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 normaliser: str = "softmax", scaled: bool = False):
        super().__init__(query_dim, key_dim, scope, window, normaliser)
        self.w_a = nn.Linear(key_dim, query_dim, bias=False)
        self.scaled = bool(scaled)

    def prepare(self, keys: Tensor) -> Tensor:
        return self.w_a(keys)                                          # (B, S, Dq)

    def score(self, query: Tensor, prepared: Tensor) -> Tensor:
        if self.scaled:
            return scaled_dot_score(query, prepared)                   # (B, T, S), / sqrt(Dq)
        return dot_score(query, prepared)                              # (B, T, S)
