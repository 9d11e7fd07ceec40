"""Multi-head scaled dot-product attention, shared by Transformer layers."""

import math
from contextlib import nullcontext
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from nmt.models.attention.normalisers import check_normaliser, masked_normalise
from nmt.models.positional.base import AttentionPositions

# The fused kernels the fast path may use. cuDNN's attention is left out: it
# builds a plan for every new (B, T, S), and token-budget batches change shape
# at nearly every update (an H200 spent 0.79-0.95 s an update in bf16 on the
# plans, 0.024-0.029 s without them; benchmarks/gpu/README.md).
FUSED_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention.

    Vaswani et al. 2017, Attention Is All You Need, arXiv:1706.03762, Sec. 3.2:

        head_h = softmax((Q W_h^Q (K W_h^K)^T + bias) / sqrt(Dh)) V W_h^V
        out    = concat(head_1 .. head_H) W^O,   Dh = D / H

    `position` (rotary, Shaw relative, ALiBi, or nothing) rotates queries
    and keys, adds a bias to the logits and a term to the context; see
    nmt.models.positional.base. `normaliser` replaces the softmax:
    "softmax", "sparsemax" or "entmax15" (nmt.models.attention.normalisers).
    Fast path, softmax only: F.scaled_dot_product_attention (bool mask,
    True = may attend; the key bias as a float mask). Explicit path, when
    weights are asked for, the position needs them or the normaliser is
    sparse: the normaliser written out. Masked keys get weight exactly 0;
    rows with nothing to attend to give weights 0, context 0.

    Use it in three calls so a decoder can cache keys and values:

        q    = attn.queries(x, q_pos)              # (B, H, T, Dh)
        k, v = attn.keys_values(memory, k_pos)     # (B, H, S, Dh) each
        out, weights = attn.attend(q, k, v, mask, q_pos, k_pos, need_weights)
    """

    def __init__(
        self,
        d_model: int,
        heads: int,
        dropout: float = 0.0,
        kv_dim: Optional[int] = None,
        position: Optional[AttentionPositions] = None,
        normaliser: str = "softmax",
    ):
        super().__init__()
        self.normaliser = check_normaliser(normaliser)
        assert d_model % heads == 0, "callers check d_model % heads"
        self.heads = heads
        self.d_head = d_model // heads
        self.dropout = dropout
        kv_dim = d_model if kv_dim is None else kv_dim
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(kv_dim, d_model)
        self.w_v = nn.Linear(kv_dim, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.position = position if position is not None else AttentionPositions()

    def _split(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.d_head).transpose(1, 2)    # (B, H, T, Dh)

    def queries(self, x: Tensor, positions: Optional[Tensor] = None) -> Tensor:
        """x (B, T, D) -> queries (B, H, T, Dh), rotated if rotary."""
        q = self._split(self.w_q(x))
        return q if positions is None else self.position.rotate(q, positions)

    def keys_values(self, x: Tensor, positions: Optional[Tensor] = None):
        """x (B, S, Dkv) -> keys, values (B, H, S, Dh); keys rotated if rotary."""
        k, v = self._split(self.w_k(x)), self._split(self.w_v(x))
        if positions is not None:
            k = self.position.rotate(k, positions)
        return k, v

    def attend(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        mask: Tensor,
        q_pos: Optional[Tensor] = None,
        k_pos: Optional[Tensor] = None,
        need_weights: bool = False,
    ):
        """q (B, H, T, Dh), k, v (B, H, S, Dh), mask bool broadcastable to
        (B, 1, T, S) -> out (B, T, D), weights (B, H, T, S) or None.

        weights are before dropout (what a heatmap shows)."""
        visible = mask.any(dim=-1, keepdim=True)         # (B, 1, T|1, 1)
        safe = mask | ~visible                           # no all-False row: no NaN
        bias = None
        if q_pos is not None and k_pos is not None:
            bias = self.position.bias(q, q_pos, k_pos)   # (B, H, T, S) or None
        scale = 1.0 / math.sqrt(self.d_head)
        p = self.dropout if self.training else 0.0
        explicit = need_weights or self.position.needs_weights or self.normaliser != "softmax"

        weights = None
        if not explicit:
            attn_mask = safe
            if bias is not None:
                attn_mask = (bias * scale).masked_fill(~safe, float("-inf"))
            with sdpa_kernel(FUSED_BACKENDS) if q.is_cuda else nullcontext():   # CPU: no cuDNN to leave out
                context = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=p)
        else:
            scores = q @ k.transpose(-2, -1)             # (B, H, T, S)
            if bias is not None:
                scores = scores + bias
            weights = masked_normalise(scores * scale, safe, self.normaliser)
            weights = weights * visible                  # fully masked rows -> 0
            dropped = F.dropout(weights, p, training=self.training)
            context = dropped @ v                        # (B, H, T, Dh)
            extra = self.position.values(dropped, q_pos, k_pos) if q_pos is not None else None
            if extra is not None:
                context = context + extra
        context = context * visible                      # (B, H, T, Dh)
        B, H, T, Dh = context.shape
        out = self.w_o(context.transpose(1, 2).reshape(B, T, H * Dh))   # (B, T, D)
        return out, weights

    def forward(self, query: Tensor, kv: Tensor, mask: Tensor, need_weights: bool = False):
        """Self- or cross-attention in one call, positions 0 .. T-1 and 0 .. S-1."""
        q_pos = torch.arange(query.size(1), device=query.device)
        k_pos = torch.arange(kv.size(1), device=kv.device)
        q = self.queries(query, q_pos)
        k, v = self.keys_values(kv, k_pos)
        return self.attend(q, k, v, mask, q_pos, k_pos, need_weights)
