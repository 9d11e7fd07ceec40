"""What every RNN-decoder attention shares: its output and its scope.

Luong, Pham & Manning 2015, Effective Approaches to Attention-based Neural
Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3: a score function
compares the query with every source state, a scope (global, local-m,
local-p; Xu et al. 2015's hard) turns the scores into weights, and the
context is the weighted sum of the values, c_t = sum_s a_t(s) h_s.

A subclass supplies the score; the base class turns scores into weights
according to `scope` and reads the values, so decoders, beam search and
heatmaps never ask which kind of attention they hold:

    prepared = attention.prepare(keys)                       # once per sentence
    out = attention(query, prepared, values, mask, positions)
    out.context (B, T, Dv), out.weights (B, T, S), out.log_prob, out.center
"""

from typing import NamedTuple, Optional

import torch
from torch import Tensor, nn

from nmt.core.errors import NmtError
from nmt.core.normalisers.masked import check_normaliser, masked_normalise
from nmt.core.scopes.global_ import global_scope
from nmt.core.scopes.hard import hard_scope
from nmt.core.scopes.local_m import local_m
from nmt.core.scopes.local_p import CentrePredictor, local_p

# scope -> function(scores (B, H, T, S), mask, centers, window, training, normaliser)
SCOPES = {"global": global_scope, "local_m": local_m, "local_p": local_p, "hard": hard_scope}


class AttentionOutput(NamedTuple):
    context: Tensor                    # (B, T, Dv) weighted values (hard: the sampled one)
    weights: Tensor                    # (B, T, S) what a heatmap shows (mean over heads)
    log_prob: Optional[Tensor] = None  # (B, T) hard: log alpha of the sampled positions
    center: Optional[Tensor] = None    # (B, T) local-p: predicted centres p_t


class Attention(nn.Module):
    """Base class: scope, window and the shared forward.

    Subclasses implement `score(query (B, T, Dq), prepared) -> (B, T, S)` or
    `(B, H, T, S)` for several heads, and may override `prepare(keys)` (default:
    the keys themselves) and `read(attn (B, H, T, S), values) -> (B, T, Do)`
    (default: the weighted sum of the values, one head).

    scope: "global" | "local_m" | "local_p" | "hard" (nmt/core/scopes/);
    window: D, the half-width of local windows (unused by global and hard).
    normaliser: "softmax" | "sparsemax" | "entmax15" (nmt/core/normalisers/),
    what turns scores into weights in every scope; `normalise()` applies it
    for a subclass that builds its own distribution.
    local_p adds the centre predictor's parameters W_p, v_p to the module.
    """

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 normaliser: str = "softmax"):
        super().__init__()
        self.normaliser = check_normaliser(normaliser)
        if scope not in SCOPES:
            raise NmtError(f"model.attention.scope={scope!r} unknown; "
                           f"choose one of {sorted(SCOPES)}")
        if scope in ("local_m", "local_p") and (int(window) != window or window < 0):
            raise NmtError(f"model.attention.window={window} must be a whole number >= 0")
        if scope == "local_p" and window < 1:
            raise NmtError(f"model.attention.window={window}: local_p needs window >= 1 "
                           "(its Gaussian has sigma = window / 2)")
        self.query_dim, self.key_dim = query_dim, key_dim
        self.scope, self.window = scope, int(window)
        self.output_size = key_dim
        self.predictor = CentrePredictor(query_dim) if scope == "local_p" else None

    def prepare(self, keys: Tensor) -> Tensor:
        """keys (B, S, Dk) -> what `score` reads, computed once per sentence."""
        return keys

    def score(self, query: Tensor, prepared) -> Tensor:
        raise NotImplementedError

    def normalise(self, scores: Tensor, mask: Tensor) -> Tensor:
        """scores (..., S), mask bool broadcastable, True = real -> weights
        (..., S) by this attention's normaliser, exactly 0 where mask is False."""
        return masked_normalise(scores, mask, self.normaliser)

    def read(self, attn: Tensor, values: Tensor) -> Tensor:
        """attn (B, 1, T, S), values (B, S, Dv) -> context (B, T, Dv)."""
        assert attn.size(1) == 1, "several heads need their own read()"
        return attn[:, 0].to(values.dtype) @ values

    def forward(self, query: Tensor, prepared, values: Tensor, mask: Tensor,
                positions: Optional[Tensor] = None) -> AttentionOutput:
        """query (B, T, Dq), values (B, S, Dv), mask (B, 1, S) bool True = real,
        positions (B, T) long target step indices (None: 0 .. T-1)."""
        attn, weights, log_prob, center = self._attend(query, prepared, mask, positions)
        context = self.read(attn, values)                             # (B, T, Do)
        return AttentionOutput(context, weights.mean(1), log_prob, center)

    def head_weights(self, query: Tensor, prepared, mask: Tensor,
                     positions: Optional[Tensor] = None) -> Tensor:
        """The distribution of every head, (B, H, T, S); H = 1 for one head."""
        return self._attend(query, prepared, mask, positions)[1]

    def _attend(self, query: Tensor, prepared, mask: Tensor, positions: Optional[Tensor]):
        """Scores through the scope -> read, weights (B, H, T, S), log_prob, center."""
        B, T, _ = query.shape
        scores = self.score(query, prepared)
        if scores.dim() == 3:
            scores = scores[:, None]                                  # (B, 1, T, S) one head
        center = centers = None
        if self.scope == "local_m":
            if positions is None:
                positions = torch.arange(T, device=query.device).expand(B, T)
            centers = positions.float()                               # (B, T) p_t = t
        elif self.scope == "local_p":
            centers = center = self.predictor(query, mask)            # (B, T)
        attn, weights, log_prob = SCOPES[self.scope](scores, mask, centers, self.window,
                                                     self.training, self.normaliser)
        return attn, weights, log_prob, center

    def extra_repr(self) -> str:
        return (f"query_dim={self.query_dim}, key_dim={self.key_dim}, scope={self.scope}, "
                f"window={self.window}, normaliser={self.normaliser}")


def require_same_dims(name: str, query_dim: int, key_dim: int) -> None:
    """Dot-product scores need the decoder state and encoder state to match."""
    if query_dim != key_dim:
        raise NmtError(
            f"model/attention={name} needs query_dim == key_dim but the decoder state has "
            f"{query_dim} and the encoder state {key_dim}; use model/attention=luong_general "
            "(it learns the map between them) or make the sizes equal")
