"""GRU and LSTM encoders over packed sequences (padding costs nothing)."""

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmt.models.encoders.output import EncoderOutput

CELLS = {"gru": nn.GRU, "lstm": nn.LSTM}


class RNNEncoder(nn.Module):
    """A (bi)directional GRU or LSTM encoder.

    Bahdanau, Cho & Bengio 2015 (bidirectional annotations h_j = [h_j->; h_j<-]);
    Luong, Pham & Manning 2015 (stacked unidirectional LSTM).
    """

    def __init__(self, vocab_size: int, cell: str = "lstm", embed_dim: int = 256,
                 hidden_size: int = 256, layers: int = 1, bidirectional: bool = True,
                 dropout: float = 0.1, pad_id: int = 0, positional=None):
        super().__init__()
        if cell not in CELLS:
            from nmt.errors import NmtError
            raise NmtError(f"cell={cell!r} unknown; choose one of {sorted(CELLS)}")
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.rnn = CELLS[cell](embed_dim, hidden_size, num_layers=layers,
                               bidirectional=bidirectional, batch_first=True,
                               dropout=dropout if layers > 1 else 0.0)
        self.dropout = nn.Dropout(dropout)
        self.bidirectional = bidirectional
        self.output_size = hidden_size * (2 if bidirectional else 1)

    def forward(self, src: Tensor, src_mask: Tensor) -> EncoderOutput:
        lengths = src_mask[:, 0, :].sum(-1)                   # (B,)
        x = self.dropout(self.embed(src))                     # (B, S, E)
        packed = pack_padded_sequence(x, lengths.cpu().clamp(min=1), batch_first=True,
                                      enforce_sorted=False)
        out, final = self.rnn(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True,
                                        total_length=src.size(1))  # (B, S, De)
        hidden = final[0] if isinstance(final, tuple) else final   # (layers*dirs, B, H)
        if self.bidirectional:
            last = torch.cat([hidden[-2], hidden[-1]], dim=-1)     # (B, 2H)
        else:
            last = hidden[-1]                                      # (B, H)
        return EncoderOutput(self.dropout(memory), last)
