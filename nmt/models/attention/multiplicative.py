"""Multiplicative scores: Luong's dot and general, and scaled dot-product."""

from torch import Tensor, nn

from nmt.models.attention.base import Attention
from nmt.models.attention.scores import dot_score, require_same_dims, scaled_dot_score


class DotAttention(Attention):
    """Luong "dot" attention.

    Luong, Pham & Manning 2015, Effective Approaches to Attention-based
    Neural Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3.1:

        score(h_t, h_s) = h_t . h_s

    No parameters; needs query_dim == key_dim (else use luong_general).
    """

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 normaliser: str = "softmax"):
        require_same_dims("luong_dot", query_dim, key_dim)
        super().__init__(query_dim, key_dim, scope, window, normaliser)

    def score(self, query: Tensor, prepared: Tensor) -> Tensor:
        return dot_score(query, prepared)                              # (B, T, S)


class GeneralAttention(Attention):
    """Luong "general" (bilinear) attention.

    Luong, Pham & Manning 2015, Effective Approaches to Attention-based
    Neural Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3.1:

        score(h_t, h_s) = h_t . (W_a h_s)

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


class ScaledDotAttention(Attention):
    """Scaled dot-product attention, one head, no projections.

    Vaswani et al. 2017, Attention Is All You Need, NeurIPS,
    arXiv:1706.03762, Sec. 3.2.1:

        score(s, h) = s . h / sqrt(d),   d = key_dim

    Needs query_dim == key_dim (else use luong_general or multihead).
    """

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 normaliser: str = "softmax"):
        require_same_dims("scaled_dot", query_dim, key_dim)
        super().__init__(query_dim, key_dim, scope, window, normaliser)

    def score(self, query: Tensor, prepared: Tensor) -> Tensor:
        return scaled_dot_score(query, prepared)                       # (B, T, S)
