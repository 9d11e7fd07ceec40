"""GRU and LSTM encoders over padded batches, with the results of packed sequences."""

import torch
from torch import Tensor, nn

from nmt.errors import NmtError
from nmt.models.dropout import Dropout
from nmt.models.encoders.output import EncoderOutput
from nmt.models.encoders.padded_rnn import run_padded

CELLS = {"gru": nn.GRU, "lstm": nn.LSTM}


class RNNEncoder(nn.Module):
    """A (bi)directional GRU or LSTM encoder.

    Bahdanau, Cho & Bengio 2015 (bidirectional annotations h_j = [h_j->; h_j<-]);
    Luong, Pham & Manning 2015 (stacked unidirectional LSTM).

    `hidden_size` is the size of the states it outputs, either way: a
    bidirectional encoder gives each direction hidden_size // 2 units, so
    h_j = [h_j-> ; h_j<-] has hidden_size entries (OpenNMT-py's convention)
    and matches a decoder of the same hidden size, which the dot and
    scaled-dot scores need. A bidirectional hidden_size must be even.
    """

    def __init__(self, vocab_size: int, cell: str, embed_dim: int = 256,
                 hidden_size: int = 256, layers: int = 1, bidirectional: bool = True,
                 dropout: float = 0.2, pad_id: int = 0, positional=None):
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
        self.dropout = Dropout(dropout)
        self.bidirectional = bidirectional
        self.output_size = hidden_size                        # [forward; backward] when bidirectional

    def forward(self, src: Tensor, src_mask: Tensor) -> EncoderOutput:
        lengths = src_mask[:, 0, :].sum(-1)                   # (B,)
        x = self.dropout(self.embed(src))                     # (B, S, E)
        # as over packed sequences, without packing's per-step backward cost (padded_rnn.py)
        memory, hidden = run_padded(self.rnn, x, lengths.clamp(min=1))   # (B, S, H), (layers*dirs, B, H/dirs)
        if self.bidirectional:
            last = torch.cat([hidden[-2], hidden[-1]], dim=-1)     # (B, H)
        else:
            last = hidden[-1]                                      # (B, H)
        return EncoderOutput(self.dropout(memory), last)
