"""Attention weighted by the size of what it moves: the norm of each source
token's transformed value vector, times its weight.

Kobayashi, Kuribayashi, Yokoi & Inui 2020, Attention is Not Only a Weight:
Analyzing Transformers with Vector Norms, EMNLP (arXiv:2004.10102), Sec. 2.
A multi-head attention's output for query t is a sum over source tokens j
of vectors, and the weight alone leaves out how long each vector is:

    out_t = sum_j sum_h alpha_h(t, j) f_h(x_j) + b_O
    f_h(x) = W_O,h (W_V,h x + b_V,h)             W_O,h: W_O's columns of head h
    shown(t, j) = || sum_h alpha_h(t, j) f_h(x_j) ||_2

(the paper's || sum alpha f(x) || of a whole multi-head layer). x_j is what
the attention reads as keys and values: the encoder's output for
cross-attention. An RNN decoder's attention has no value or output
projection (its values are the memory states h_j themselves), so there
f(x) = x and shown(t, j) = alpha(t, j) ||h_j||. Relative-position value
terms (Shaw et al.), where a model has them, are left out.
"""

import torch
from torch import Tensor


def value_vectors(states: Tensor, w_v: Tensor, b_v: Tensor | None, w_o: Tensor, heads: int) -> Tensor:
    """states (S, Dkv), w_v (D, Dkv), b_v (D,) or None, w_o (D, D) ->
    f_h(x_j) (H, S, D): each head's value of each token through its part of W_O."""
    values = states.float() @ w_v.float().T                          # (S, D)
    if b_v is not None:
        values = values + b_v.float()
    S, D = values.shape
    per_head = values.view(S, heads, D // heads).transpose(0, 1)     # (H, S, Dh)
    w_o_heads = w_o.float().view(D, heads, D // heads).permute(1, 2, 0)   # (H, Dh, D)
    return per_head @ w_o_heads                                      # (H, S, D)


def value_norm(weights: Tensor, vectors: Tensor) -> Tensor:
    """weights (H, T, S), vectors f_h(x_j) (H, S, D) -> (T, S):
    || sum_h weights[h, t, j] vectors[h, j] ||_2."""
    moved = torch.einsum("hts,hsd->tsd", weights.float(), vectors.float())   # (T, S, D)
    return moved.norm(dim=-1)


def rnn_value_norm(weights: Tensor, states: Tensor) -> Tensor:
    """weights (T, S), memory states h_j (S, D) -> alpha(t, j) ||h_j||  (T, S)."""
    return weights.float() * states.float().norm(dim=-1)[None, :]
