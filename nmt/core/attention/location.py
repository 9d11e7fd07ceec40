"""Luong's location-based attention: weights from the target state alone.

Luong, Pham & Manning 2015, Effective Approaches to Attention-based Neural
Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3.1:

    a_t = softmax(W_a h_t)
"""

from torch import Tensor, nn

from nmt.core.attention.base import Attention
from nmt.core.errors import NmtError


class LocationAttention(Attention):
    """Luong "location" attention, a_t = softmax(W_a h_t) over the real source positions.

    The scores depend only on the target state, never on the keys. W_a maps
    query_dim -> max_len (no bias, as in the paper); position s reads row s,
    rows beyond the batch's padded length S are dropped and padding is
    masked (the paper leaves sentence lengths implicit). S > max_len raises
    NmtError.
    """

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 max_len: int = 256, normaliser: str = "softmax"):
        super().__init__(query_dim, key_dim, scope, window, normaliser)
        self.max_len = max_len
        self.w_a = nn.Linear(query_dim, max_len, bias=False)

    def prepare(self, keys: Tensor) -> Tensor:
        self._check_length(keys.size(1))
        return keys

    def score(self, query: Tensor, prepared: Tensor) -> Tensor:
        S = prepared.size(1)
        self._check_length(S)
        return self.w_a(query)[..., :S]                  # (B, T, max_len) -> (B, T, S)

    def _check_length(self, S: int) -> None:
        if S > self.max_len:
            raise NmtError(f"source of {S} tokens is longer than luong_location's "
                           f"model.attention.max_len={self.max_len}; raise it or drop "
                           "longer sentences")
