"""Bridges: the RNN decoder's first state from the encoder's states.

Bahdanau, Cho & Bengio 2015, ICLR, arXiv:1409.0473, App. A.2.2 start the
decoder from the backward encoder's first state, s_0 = tanh(W_s h_1<-);
the other bridges pool all the states (Nematus' mean; the attention pools of
Zhou et al. 2016, Yang et al. 2016 and Lin et al. 2017), each cited in its
class.

Every bridge has

    forward(memory (B, S, De), mask (B, 1, S) bool, last (B, De))
        -> init (B, Dd), penalty (scalar tensor, already weighted; 0 for most)

Pooling bridges (Zhou, Han, Structured) attend over real source positions
only, then map the pooled vector to the decoder size with tanh(W r + b).
"""

import torch
from torch import Tensor, nn

from nmt.core.errors import NmtError
from nmt.core.normalisers.softmax import masked_softmax


def _zero_penalty(memory: Tensor) -> Tensor:
    return memory.new_zeros(())


class LastBridge(nn.Module):
    """init = tanh(W last + b), `last` being the encoder's final state.

    Bahdanau, Cho & Bengio 2015, Neural Machine Translation by Jointly
    Learning to Align and Translate, ICLR, App. A.2.2: s_0 = tanh(W_s h_1<-)
    (the encoder decides which state is "last", e.g. the backward RNN's
    first). The bias, omitted from the paper's equations, is kept.
    """

    def __init__(self, enc_dim: int, dec_dim: int):
        super().__init__()
        self.proj = nn.Linear(enc_dim, dec_dim)

    def forward(self, memory: Tensor, mask: Tensor, last: Tensor):
        return torch.tanh(self.proj(last)), _zero_penalty(memory)        # (B, Dd)


class MeanBridge(nn.Module):
    """init = tanh(W mean_j h_j + b), the mean over real source positions.

    Sennrich et al. 2017, Nematus: a Toolkit for Neural Machine Translation,
    EACL (demo), Sec. 2: the decoder starts from the mean of the source
    annotations instead of one end state. Padding is left out of the mean.
    """

    def __init__(self, enc_dim: int, dec_dim: int):
        super().__init__()
        self.proj = nn.Linear(enc_dim, dec_dim)

    def forward(self, memory: Tensor, mask: Tensor, last: Tensor):
        real = mask.transpose(1, 2).to(memory.dtype)                     # (B, S, 1)
        mean = (memory * real).sum(1) / real.sum(1)                       # (B, De)
        return torch.tanh(self.proj(mean)), _zero_penalty(memory)        # (B, Dd)


class ZeroBridge(nn.Module):
    """init = 0: the decoder starts from nothing and learns all from attention."""

    def __init__(self, enc_dim: int, dec_dim: int):
        super().__init__()
        self.dec_dim = dec_dim

    def forward(self, memory: Tensor, mask: Tensor, last: Tensor):
        return memory.new_zeros(memory.size(0), self.dec_dim), _zero_penalty(memory)


class ZhouBridge(nn.Module):
    """Attention pooling with one learned vector.

    Zhou et al. 2016, Attention-Based Bidirectional Long Short-Term Memory
    Networks for Relation Classification, ACL, Sec. 3.3:

        M = tanh(H),   alpha = softmax over real j of w . M_j,   r = alpha^T H

    then init = tanh(W r + b). The paper ends with h* = tanh(r); the linear
    map to the decoder size is our addition.
    """

    def __init__(self, enc_dim: int, dec_dim: int):
        super().__init__()
        self.w = nn.Linear(enc_dim, 1, bias=False)
        self.proj = nn.Linear(enc_dim, dec_dim)

    def forward(self, memory: Tensor, mask: Tensor, last: Tensor):
        scores = self.w(torch.tanh(memory)).transpose(1, 2)             # (B, 1, S)
        alpha = masked_softmax(scores, mask)                              # (B, 1, S)
        r = (alpha @ memory).squeeze(1)                                   # (B, De)
        return torch.tanh(self.proj(r)), _zero_penalty(memory)           # (B, Dd)


class HanBridge(nn.Module):
    """Word-level attention of the Hierarchical Attention Network.

    Yang et al. 2016, Hierarchical Attention Networks for Document
    Classification, NAACL, Sec. 2.2 (word attention):

        u_j = tanh(W h_j + b),   alpha = softmax over real j of u_j . u_w,
        r = sum_j alpha_j h_j

    W: enc_dim -> hidden_dim, u_w: hidden_dim (the learned context vector);
    then init = tanh(W_o r + b_o), the map to the decoder size being ours.
    """

    def __init__(self, enc_dim: int, dec_dim: int, hidden_dim: int = 256):
        super().__init__()
        self.w = nn.Linear(enc_dim, hidden_dim)
        self.u_w = nn.Linear(hidden_dim, 1, bias=False)
        self.proj = nn.Linear(enc_dim, dec_dim)

    def forward(self, memory: Tensor, mask: Tensor, last: Tensor):
        u = torch.tanh(self.w(memory))                                    # (B, S, A)
        alpha = masked_softmax(self.u_w(u).transpose(1, 2), mask)         # (B, 1, S)
        r = (alpha @ memory).squeeze(1)                                   # (B, De)
        return torch.tanh(self.proj(r)), _zero_penalty(memory)           # (B, Dd)


class StructuredBridge(nn.Module):
    """Structured self-attentive sentence embedding, r hops.

    Lin et al. 2017, A Structured Self-attentive Sentence Embedding, ICLR,
    arXiv:1703.03130, Sec. 2.1 and 2.2:

        A = softmax over real j of W_s2 tanh(W_s1 H^T)     (r, S)
        M = A H                                             (r, De)
        P = || A A^T - I ||_F^2

    init = tanh(W flatten(M) + b) (the paper feeds M to a classifier MLP;
    here it starts the decoder). penalty = penalty_weight * mean over the
    batch of P, returned already weighted. W_s1: enc_dim -> hidden_dim (d_a),
    W_s2: hidden_dim -> hops (r), no biases, as in the paper.
    """

    def __init__(self, enc_dim: int, dec_dim: int, hops: int = 4, hidden_dim: int = 128,
                 penalty_weight: float = 0.1):
        super().__init__()
        if hops < 1:
            raise NmtError(f"model.bridge.hops={hops} must be >= 1")
        if penalty_weight < 0:
            raise NmtError(f"model.bridge.penalty_weight={penalty_weight} must be >= 0")
        self.hops, self.penalty_weight = hops, penalty_weight
        self.w_s1 = nn.Linear(enc_dim, hidden_dim, bias=False)
        self.w_s2 = nn.Linear(hidden_dim, hops, bias=False)
        self.proj = nn.Linear(hops * enc_dim, dec_dim)

    def forward(self, memory: Tensor, mask: Tensor, last: Tensor):
        B = memory.size(0)
        scores = self.w_s2(torch.tanh(self.w_s1(memory))).transpose(1, 2)  # (B, r, S)
        A = masked_softmax(scores, mask)                                  # (B, r, S)
        M = A @ memory                                                    # (B, r, De)
        init = torch.tanh(self.proj(M.reshape(B, -1)))                    # (B, Dd)
        eye = torch.eye(self.hops, device=A.device, dtype=A.dtype)
        gram = A @ A.transpose(1, 2) - eye                                # (B, r, r)
        penalty = gram.pow(2).sum((1, 2)).mean()                          # scalar
        return init, self.penalty_weight * penalty
