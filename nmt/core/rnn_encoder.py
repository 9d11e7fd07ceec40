"""GRU and LSTM encoders over padded batches, run as packed sequences.

Bahdanau, Cho & Bengio 2015, Neural Machine Translation by Jointly Learning
to Align and Translate, ICLR, arXiv:1409.0473, Sec. 3.2 (bidirectional
annotations) and Luong, Pham & Manning 2015, EMNLP, arXiv:1508.04025, Sec. 3
(stacked unidirectional LSTM):

    h_j-> = RNN->(h_{j-1}->, E x_j),   h_j<- = RNN<-(h_{j+1}<-, E x_j)
    h_j   = [h_j-> ; h_j<-]
"""

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmt.core.errors import NmtError
from nmt.core.outputs import EncoderOutput

CELLS = {"gru": nn.GRU, "lstm": nn.LSTM}


def run_packed(rnn: nn.RNNBase, x: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """x (B, S, I), lengths (B,) >= 1 -> outputs (B, S, dirs * H), 0 at padding,
    and final states (layers * dirs, B, H) (an LSTM's h, not its c).

    Packing runs each sentence only over its real tokens, so the backward
    direction starts at the last real token, not at the padding."""
    packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
    out, hidden = rnn(packed)
    if isinstance(hidden, tuple):                               # LSTM: (h, c)
        hidden = hidden[0]
    outputs, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
    return outputs, hidden                                      # (B, S, dirs*H), (layers*dirs, B, H)


class RNNEncoder(nn.Module):
    """A (bi)directional GRU or LSTM encoder.

    `hidden_size` is the size of the states it outputs, either way: a
    bidirectional encoder gives each direction hidden_size // 2 units, so
    h_j = [h_j-> ; h_j<-] has hidden_size entries (OpenNMT-py's convention)
    and matches a decoder of the same hidden size, which the dot and
    scaled-dot scores need. A bidirectional hidden_size must be even.

    `run_rnn(rnn, x, lengths)` runs the recurrence: run_packed here;
    nmt/speedups/padded_rnn.py's run_padded gives the same results faster.
    """

    def __init__(self, vocab_size: int, cell: str, embed_dim: int = 256,
                 hidden_size: int = 256, layers: int = 1, bidirectional: bool = True,
                 dropout: float = 0.2, pad_id: int = 0):
        super().__init__()
        if cell not in CELLS:
            raise NmtError(f"cell={cell!r} unknown; choose one of {sorted(CELLS)}")
        if bidirectional and hidden_size % 2:
            raise NmtError(f"model.encoder.hidden_size={hidden_size} must be even for a bidirectional "
                           f"encoder: each direction gets half of it; use {hidden_size - 1} or {hidden_size + 1}, or "
                           "model.encoder.bidirectional=false")
        per_direction = hidden_size // 2 if bidirectional else hidden_size
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.rnn = CELLS[cell](embed_dim, per_direction, num_layers=layers,
                               bidirectional=bidirectional, batch_first=True,
                               dropout=dropout if layers > 1 else 0.0)
        self.dropout = nn.Dropout(dropout)
        self.bidirectional = bidirectional
        self.output_size = hidden_size                        # [forward; backward] when bidirectional
        self.run_rnn = run_packed

    def forward(self, src: Tensor, src_mask: Tensor) -> EncoderOutput:
        lengths = src_mask[:, 0, :].sum(-1)                   # (B,)
        x = self.dropout(self.embed(src))                     # (B, S, E)
        memory, hidden = self.run_rnn(self.rnn, x, lengths.clamp(min=1))   # (B, S, H), (layers*dirs, B, H/dirs)
        if self.bidirectional:
            last = torch.cat([hidden[-2], hidden[-1]], dim=-1)     # (B, H)
        else:
            last = hidden[-1]                                      # (B, H)
        return EncoderOutput(self.dropout(memory), last)
