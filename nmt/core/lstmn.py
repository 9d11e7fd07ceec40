"""Long Short-Term Memory-Network: an LSTM that attends over its own past.

Cheng, Dong & Lapata 2016, Long Short-Term Memory-Networks for Machine
Reading, EMNLP, Sec. 3.2. At step t, with tapes h_1..h_{t-1}, c_1..c_{t-1}
(plus a zero start slot h_0 = c_0 = 0):

    a_i   = v^T tanh(W_h h_i + W_x x_t + W_s hs_{t-1})   for i < t
    s     = softmax(a)
    hs_t  = sum_i s_i h_i ,   cs_t = sum_i s_i c_i      (adaptive summaries)
    [i, f, o, g] = [sig, sig, sig, tanh](W [x_t; hs_t] + b)
    c_t = f * cs_t + i * g ,   h_t = o * tanh(c_t)
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.core.outputs import EncoderOutput


class LSTMNEncoder(nn.Module):
    """LSTMN encoder (intra-attention over the memory and hidden tapes).

    The state update reads the attention summary hs_t where a plain LSTM reads
    h_{t-1} (the seed's SimpleRNN form: h_t = tanh(A [x_t; c_{t-1}] + b)).

    `self_weights`, a list, receives s for every step as one (B, 1, S, S) map:
    row t over the tape slots [start, h_1, ..., h_{S-1}], zero right of slot t.
    """

    attends_to_its_tape = True      # the explorer labels the key axis "<start>", then the tokens

    def __init__(self, vocab_size: int, embed_dim: int = 256, hidden_size: int = 256,
                 dropout: float = 0.2, pad_id: int = 0):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.w_h = nn.Linear(hidden_size, hidden_size, bias=False)
        self.w_x = nn.Linear(embed_dim, hidden_size, bias=False)
        self.w_s = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v = nn.Linear(hidden_size, 1, bias=False)
        self.gates = nn.Linear(embed_dim + hidden_size, 4 * hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.hidden_size = hidden_size
        self.output_size = hidden_size

    def forward(self, src: Tensor, src_mask: Tensor, self_weights: list | None = None) -> EncoderOutput:
        B, S = src.shape
        x = self.dropout(self.embed(src))                          # (B, S, E)
        x_proj = self.w_x(x)                                       # (B, S, H)
        zeros = x.new_zeros(B, 1, self.hidden_size)
        h_tape, c_tape, hproj_tape = zeros, zeros, zeros           # (B, t, H)
        h_summary = x.new_zeros(B, self.hidden_size)               # hs_{t-1}
        outputs, weight_rows = [], []
        for t in range(S):
            scores = self.v(torch.tanh(hproj_tape + (x_proj[:, t] + self.w_s(h_summary))[:, None]))
            s = scores.softmax(dim=1)                              # (B, t, 1)
            if self_weights is not None:
                weight_rows.append(F.pad(s[..., 0], (0, S - s.size(1))))   # (B, S)
            h_summary = (s * h_tape).sum(1)                        # (B, H)
            c_summary = (s * c_tape).sum(1)                        # (B, H)
            i, f, o, g = self.gates(torch.cat([x[:, t], h_summary], -1)).chunk(4, -1)
            c = torch.sigmoid(f) * c_summary + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)                   # (B, H)
            outputs.append(h)
            h_tape = torch.cat([h_tape, h[:, None]], 1)
            c_tape = torch.cat([c_tape, c[:, None]], 1)
            hproj_tape = torch.cat([hproj_tape, self.w_h(h)[:, None]], 1)
        memory = torch.stack(outputs, 1)                           # (B, S, H)
        if self_weights is not None:
            self_weights.append(torch.stack(weight_rows, 1)[:, None])     # (B, 1, S, S)
        # Pad positions come after every real one, so they never enter a real
        # token's tape; zero them so nothing downstream sees them.
        memory = memory * src_mask[:, 0, :, None]
        last_index = (src_mask[:, 0].sum(-1) - 1).clamp(min=0)     # (B,)
        last = memory[torch.arange(B, device=memory.device), last_index]   # (B, H)
        return EncoderOutput(self.dropout(memory), last)
