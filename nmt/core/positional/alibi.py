"""ALiBi: attention with linear biases by distance, no position embeddings.

Press, Smith & Lewis 2022, Train Short, Test Long: Attention with Linear
Biases Enables Input Length Extrapolation, ICLR, arXiv:2108.12409,
Sec. 3:

    softmax(q_i K^T / sqrt(Dh) + m_h . [-(i-1), ..., -2, -1, 0])
    m_h = 2^(-8h/H), h = 1 .. H            (see alibi_slopes)
"""

import math
from typing import Optional

import torch
from torch import Tensor

from nmt.core.positional.base import AttentionPositions, PositionalSpec


def alibi_slopes(heads: int) -> list[float]:
    """The head-specific slopes m_1 .. m_H of Press et al. 2022, Sec. 3.

    H a power of 2: the geometric sequence that starts at 2^(-8/H) with
    ratio 2^(-8/H), so 8 heads get 1/2, 1/4, ..., 1/256.
    Otherwise (the rule of the authors' released code; the paper trains
    only powers of 2), with c the largest power of 2 below H: the c slopes
    for c heads, then the first H - c of every other slope for 2c heads
    (m_1, m_3, m_5, ... of 2c): 6 heads get 1/4, 1/16, 1/64, 1/256, then
    1/2, 1/8.
    """
    if heads < 1:
        raise ValueError(f"ALiBi needs at least one head, got {heads}")
    if heads & (heads - 1) == 0:                               # a power of 2
        return [2.0 ** (-8.0 * h / heads) for h in range(1, heads + 1)]   # m_h = 2^(-8h/H)
    c = 2 ** int(math.floor(math.log2(heads)))
    return alibi_slopes(c) + alibi_slopes(2 * c)[0::2][: heads - c]


def alibi_bias(slopes: Tensor, q_pos: Tensor, k_pos: Tensor) -> Tensor:
    """-m_h |i - j| for every head h, query position i and key position j.

    slopes (H,), q_pos (T,), k_pos (S,) long -> (H, T, S) float.
    Under a causal mask only j <= i is seen, where |i - j| = i - j: the
    paper's decoder bias -m (i - j). Both use absolute indices, so a cached
    decoder step (q_pos = [t], k_pos = 0 .. t) gets the same row as
    teacher forcing.
    """
    distance = (q_pos[:, None] - k_pos[None, :]).abs()        # (T, S)
    return -slopes[:, None, None] * distance.to(slopes.dtype)  # (H, T, S)


class AlibiBias(AttentionPositions):
    """The linear bias of one self-attention layer; no parameters.

    The number of heads H is read from the queries, so one spec serves
    encoder and decoder alike. MultiHeadAttention adds `bias()` to q . k
    before its 1/sqrt(Dh) scaling; the bias is multiplied by sqrt(Dh) here
    so that the scaled logits get exactly -m |i - j|, the paper's bias on
    q . k / sqrt(Dh).
    """

    def __init__(self, d_head: int):
        super().__init__()
        self.d_head = d_head
        self.slopes: dict[tuple, Tensor] = {}   # (heads, device) -> (H,): copied to a GPU once, not per call

    def bias(self, q: Tensor, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        """q (B, H, T, Dh) -> (1, H, T, S), before the 1/sqrt(Dh) scaling."""
        key = (q.size(1), q.device)
        if key not in self.slopes:
            self.slopes[key] = torch.tensor(alibi_slopes(q.size(1)), device=q.device, dtype=torch.float32)
        slopes = self.slopes[key]                                          # (H,)
        bias = alibi_bias(slopes, q_pos, k_pos) * math.sqrt(self.d_head)   # (H, T, S)
        return bias.to(q.dtype)[None]                                      # (1, H, T, S)


class AlibiPositions(PositionalSpec):
    """Attention with Linear Biases.

    No position embeddings are added to the tokens; every self-attention
    layer adds -m_h (i - j) to the logit of query i and key j <= i.

    Choices (the paper treats only causal language models):
    - the decoder's causal self-attention gets -m_h (i - j), j <= i;
    - the encoder's bidirectional self-attention gets the symmetric
      -m_h |i - j|, as is common for bidirectional models. Alone, that
      bias cannot tell left from right: the encoder's states of a reversed
      sentence are its states reversed, and since cross-attention sees no
      order either, a model translates a sentence and its reversal alike.
      Word order then comes only from what the words are;
    - cross-attention gets no bias (query and key positions live in
      different sentences);
    - the bias is added whichever normaliser follows (softmax, sparsemax,
      entmax15).
    """

    kind = "alibi"

    def __init__(self, kind: Optional[str] = None):
        super().__init__(kind)

    def attention_layer(self, d_head: int) -> AlibiBias:
        return AlibiBias(d_head)
