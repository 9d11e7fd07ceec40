"""Multi-head scaled dot-product attention: one kernel for the Transformer and the RNN decoder.

Vaswani et al. 2017, Attention Is All You Need, NeurIPS, arXiv:1706.03762,
Sec. 3.2.1 and 3.2.2:

    head_h = softmax(Q W_h^Q (K W_h^K)^T / sqrt(Dh)) V W_h^V
    out    = concat(head_1 .. head_H) W^O,        Dh = D / H

The kernel is the three functions below: split_heads, head_scores and
merge_heads. MultiHeadAttention (every Transformer layer) runs them, or
torch's fused F.scaled_dot_product_attention when nothing needs the weights
(the fast path; tests/core/test_multihead.py holds the two equal);
MultiHeadDotAttention (model/attention=multihead, an RNN decoder) runs the
same scores through an attention scope (global, local, hard) before reading.
"""

import math
from contextlib import nullcontext
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from nmt.core.attention.base import Attention
from nmt.core.errors import NmtError
from nmt.core.normalisers.masked import check_normaliser, masked_normalise
from nmt.core.positional.base import AttentionPositions

# The fused kernels the fast path may use. cuDNN's attention is left out: it
# builds a plan for every new (B, T, S), and token-budget batches change shape
# at nearly every update (an H200 spent 0.79-0.95 s an update in bf16 on the
# plans, 0.024-0.029 s without them; benchmarks/gpu/README.md).
FUSED_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def split_heads(x: Tensor, heads: int) -> Tensor:
    """x (B, L, H * Dh) -> (B, H, L, Dh): head h reads its slice of the features."""
    B, L, D = x.shape
    return x.view(B, L, heads, D // heads).transpose(1, 2)


def head_scores(q: Tensor, k: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """q (B, H, T, Dh), k (B, H, S, Dh) -> (q . k + bias) / sqrt(Dh), (B, H, T, S).

    `bias` (a position's extra logits, broadcastable) is added before the scaling."""
    scores = q @ k.transpose(-2, -1)                     # (B, H, T, S)
    if bias is not None:
        scores = scores + bias
    return scores * (1.0 / math.sqrt(q.size(-1)))


def merge_heads(context: Tensor) -> Tensor:
    """(B, H, T, Dh) -> (B, T, H * Dh), the heads side by side."""
    B, H, T, Dh = context.shape
    return context.transpose(1, 2).reshape(B, T, H * Dh)


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention.

    Vaswani et al. 2017, Sec. 3.2, with a position's bias in the logits:

        head_h = softmax((Q W_h^Q (K W_h^K)^T + bias) / sqrt(Dh)) V W_h^V
        out    = concat(head_1 .. head_H) W^O,   Dh = D / H

    `position` (rotary, Shaw relative, ALiBi, or nothing) rotates queries
    and keys, adds a bias to the logits and a term to the context; see
    nmt/core/positional/base.py. `normaliser` replaces the softmax:
    "softmax", "sparsemax" or "entmax15" (nmt/core/normalisers/).
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

    def queries(self, x: Tensor, positions: Optional[Tensor] = None) -> Tensor:
        """x (B, T, D) -> queries (B, H, T, Dh), rotated if rotary."""
        q = split_heads(self.w_q(x), self.heads)                      # (B, H, T, Dh)
        return q if positions is None else self.position.rotate(q, positions)

    def keys_values(self, x: Tensor, positions: Optional[Tensor] = None):
        """x (B, S, Dkv) -> keys, values (B, H, S, Dh); keys rotated if rotary."""
        k, v = split_heads(self.w_k(x), self.heads), split_heads(self.w_v(x), self.heads)
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
            weights = masked_normalise(head_scores(q, k, bias), safe, self.normaliser)   # (B, H, T, S)
            weights = weights * visible                  # fully masked rows -> 0
            dropped = F.dropout(weights, p, training=self.training)
            context = dropped @ v                        # (B, H, T, Dh)
            extra = self.position.values(dropped, q_pos, k_pos) if q_pos is not None else None
            if extra is not None:
                context = context + extra
        context = context * visible                      # (B, H, T, Dh)
        return self.w_o(merge_heads(context)), weights   # (B, T, D)

    def forward(self, query: Tensor, kv: Tensor, mask: Tensor, need_weights: bool = False):
        """Self- or cross-attention in one call, positions 0 .. T-1 and 0 .. S-1."""
        q_pos = torch.arange(query.size(1), device=query.device)
        k_pos = torch.arange(kv.size(1), device=kv.device)
        q = self.queries(query, q_pos)
        k, v = self.keys_values(kv, k_pos)
        return self.attend(q, k, v, mask, q_pos, k_pos, need_weights)


class MultiHeadDotAttention(Attention):
    """H heads of scaled dot-product attention for an RNN decoder (model/attention=multihead).

    Vaswani et al. 2017, Sec. 3.2.2, with one decoder state s per step as the
    query and keys = values = the encoder states H:

        head_h = softmax(s W_q^h . (H W_k^h) / sqrt(Dh)) H W_v^h
        c      = concat(head_1 .. head_H) W_o,        Dh = key_dim / H

    The scores are the kernel's head_scores; the scope (global, local-m,
    local-p, hard; nmt/core/scopes/) turns them into weights for every head
    alike (one local-p centre per query, shared by the heads; hard samples
    per head). Inner size and output size are key_dim. No biases. `weights`
    in the output is the mean over heads; `head_weights()` gives every head
    (B, H, T, S). W_k H is prepared once per sentence.
    """

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 heads: int = 4, normaliser: str = "softmax"):
        if heads < 1 or key_dim % heads:
            raise NmtError(f"model.attention.heads={heads} must divide the encoder state size "
                           f"{key_dim}; choose a divisor of {key_dim}")
        super().__init__(query_dim, key_dim, scope, window, normaliser)
        self.heads, self.head_dim = heads, key_dim // heads
        self.w_q = nn.Linear(query_dim, key_dim, bias=False)
        self.w_k = nn.Linear(key_dim, key_dim, bias=False)
        self.w_v = nn.Linear(key_dim, key_dim, bias=False)
        self.w_o = nn.Linear(key_dim, key_dim, bias=False)

    def prepare(self, keys: Tensor) -> Tensor:
        return split_heads(self.w_k(keys), self.heads)                 # (B, H, S, Dh)

    def score(self, query: Tensor, prepared: Tensor) -> Tensor:
        return head_scores(split_heads(self.w_q(query), self.heads), prepared)   # (B, H, T, S)

    def read(self, attn: Tensor, values: Tensor) -> Tensor:
        """attn (B, H, T, S), values (B, S, Dk) -> context (B, T, Dk)."""
        v = split_heads(self.w_v(values), self.heads)                  # (B, H, S, Dh)
        return self.w_o(merge_heads(attn.to(v.dtype) @ v))             # (B, T, Dk)
