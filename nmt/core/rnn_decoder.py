"""GRU and LSTM decoders with attention, Bahdanau-style or Luong-style.

style="bahdanau": Bahdanau, Cho & Bengio 2015, Neural Machine Translation by
Jointly Learning to Align and Translate, ICLR, arXiv:1409.0473, Sec. 3.1 and
App. A:

    c_i = attend(s_{i-1}, H)               query is the previous state
    s_i = RNN(s_{i-1}, [E y_{i-1}; c_i])    context fed into the recurrence
    t_i = tanh(W_o [s_i; c_i; E y_{i-1}])   deep output (tanh, not maxout)
    p(y_i) = softmax(W_v t_i)

style="luong": Luong, Pham & Manning 2015, Effective Approaches to
Attention-based Neural Machine Translation, EMNLP, arXiv:1508.04025, Sec. 3
and 3.3:

    h_t  = RNN(h_{t-1}, [E y_{t-1}; ht_{t-1}])   ht fed back if input_feeding
    c_t  = attend(h_t, H)                        query is the current state
    ht_t = tanh(W_c [c_t; h_t])                  attentional vector
    p(y_t) = softmax(W_s ht_t)
"""

import torch
from torch import Tensor, nn

from nmt.core.errors import NmtError
from nmt.core.outputs import DecoderOutput, Memory

CELLS = {"gru": nn.GRU, "lstm": nn.LSTM}
STYLES = ("bahdanau", "luong")


class RNNDecoder(nn.Module):
    """An attentional GRU/LSTM decoder, style "bahdanau" or "luong" (the formulas above).

    With coverage attention (attention.uses_coverage, model/attention=coverage)
    the state also holds the coverage vector c_t = sum over t' < t of a_t'
    (B, S), passed to every attention call and reordered with the beams;
    teacher forcing then runs step by step (also for Luong without input
    feeding) and returns every c_t in DecoderOutput.coverage.

    The state is a dict of batch-first tensors, so beams reorder it generically.
    """

    def __init__(self, vocab_size: int, memory_dim: int, attention: nn.Module,
                 cell: str, style: str = "luong", embed_dim: int = 256,
                 hidden_size: int = 256, layers: int = 1, dropout: float = 0.2,
                 input_feeding: bool = True, tie_embeddings: bool = False,
                 pad_id: int = 0):
        super().__init__()
        if cell not in CELLS:
            raise NmtError(f"model.decoder.cell={cell!r} unknown; choose one of {sorted(CELLS)}")
        if style not in STYLES:
            raise NmtError(f"model.decoder.style={style!r} unknown; choose one of {list(STYLES)}")
        self.style, self.cell = style, cell
        self.coverage = bool(getattr(attention, "uses_coverage", False))
        self.input_feeding = input_feeding and style == "luong"
        self.attention = attention
        context_size = attention.output_size
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        if style == "bahdanau":
            rnn_input = embed_dim + context_size
            self.readout = nn.Linear(hidden_size + context_size + embed_dim, hidden_size)
        else:
            rnn_input = embed_dim + (hidden_size if self.input_feeding else 0)
            self.readout = nn.Linear(context_size + hidden_size, hidden_size)
        self.rnn = CELLS[cell](rnn_input, hidden_size, num_layers=layers, batch_first=True,
                               dropout=dropout if layers > 1 else 0.0)
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(hidden_size, vocab_size)
        if tie_embeddings:
            if embed_dim != hidden_size:
                raise NmtError("model.decoder.tie_embeddings needs embed_dim == hidden_size")
            self.output.weight = self.embed.weight
        self.hidden_size, self.layers = hidden_size, layers

    # -- state ---------------------------------------------------------------
    def init_state(self, memory: Memory, init: Tensor) -> dict:
        """init (B, Dd) from the bridge starts every layer."""
        B = init.size(0)
        state = {
            "h": init[:, None, :].expand(B, self.layers, self.hidden_size).contiguous(),  # (B, L, Dd)
            "keys": self.attention.prepare(memory.states),
            "t": 0,
        }
        if self.cell == "lstm":
            state["c"] = torch.zeros_like(state["h"])
        if self.input_feeding:
            state["feed"] = init.new_zeros(B, self.hidden_size)
        if self.coverage:
            state["coverage"] = torch.zeros(B, memory.states.size(1), device=init.device)  # (B, S)
        return state

    def reorder_state(self, state: dict, index: Tensor) -> dict:
        return {k: _select(v, index) for k, v in state.items()}

    def _rnn(self, x: Tensor, state: dict):
        """x (B, t, I) -> outputs (B, t, Dd), new h/c (B, L, Dd)."""
        h = state["h"].transpose(0, 1).contiguous()                 # (L, B, Dd)
        if self.cell == "lstm":
            out, (h, c) = self.rnn(x, (h, state["c"].transpose(0, 1).contiguous()))
            return out, h.transpose(0, 1), c.transpose(0, 1)
        out, h = self.rnn(x, h)
        return out, h.transpose(0, 1), None

    # -- one step ------------------------------------------------------------
    def _step(self, emb: Tensor, state: dict, memory: Memory):
        """emb (B, E) -> attentional vector (B, Dd), new state, attention output."""
        B = emb.size(0)
        positions = torch.full((B, 1), state["t"], dtype=torch.long, device=emb.device)
        new = dict(state, t=state["t"] + 1)
        extra = {"coverage": state["coverage"][:, None]} if self.coverage else {}   # (B, 1, S)
        if self.style == "bahdanau":
            query = state["h"][:, -1:, :]                            # (B, 1, Dd) = s_{i-1}
            att = self.attention(query, state["keys"], memory.states, memory.mask, positions, **extra)
            x = torch.cat([emb, att.context[:, 0]], -1)[:, None]    # (B, 1, E + Dc)
            out, new["h"], c = self._rnn(x, state)
            out = out[:, 0]                                          # (B, Dd)
            vec = torch.tanh(self.readout(torch.cat([out, att.context[:, 0], emb], -1)))
        else:
            x = torch.cat([emb, state["feed"]], -1) if self.input_feeding else emb
            out, new["h"], c = self._rnn(x[:, None], state)         # (B, 1, Dd)
            att = self.attention(out, state["keys"], memory.states, memory.mask, positions, **extra)
            vec = torch.tanh(self.readout(torch.cat([att.context[:, 0], out[:, 0]], -1)))
            if self.input_feeding:
                new["feed"] = vec
        if c is not None:
            new["c"] = c
        if self.coverage:
            new["coverage"] = state["coverage"] + att.weights[:, 0].float()   # c_{t+1} (B, S)
        return self.dropout(vec), new, att

    def step(self, y_prev: Tensor, state: dict, memory: Memory):
        """y_prev (B,) -> logits (B, V), state, weights (B, S)."""
        vec, state, att = self._step(self.embed(y_prev), state, memory)
        return self.output(vec), state, att.weights[:, 0]

    # -- teacher forcing -----------------------------------------------------
    # trainer.compile=true compiles the encoder and leaves this loop eager (nmt/speedups/eager_loop.py): Dynamo
    # would unroll it for every target length, and torch 2.13's Inductor fails on the unrolled step's shapes.
    def forward(self, tgt_in: Tensor, state: dict, memory: Memory,
                need_weights: bool = False) -> DecoderOutput:
        emb = self.dropout(self.embed(tgt_in))                       # (B, T, E)
        if self.style == "luong" and not self.input_feeding and not self.coverage:
            return self._forward_parallel(emb, state, memory)
        vecs, weights, log_probs, centers, coverage = [], [], [], [], []
        for emb_t in emb.unbind(1):                                  # one backward stack, not T slices
            if self.coverage:
                coverage.append(state["coverage"])                   # c_t (B, S)
            vec, state, att = self._step(emb_t, state, memory)
            vecs.append(vec)
            weights.append(att.weights)
            log_probs.append(att.log_prob)
            centers.append(att.center)
        return DecoderOutput(
            self.output(torch.stack(vecs, 1)),                       # (B, T, V)
            torch.cat(weights, 1),                                   # (B, T, S)
            None,
            None if log_probs[0] is None else torch.cat(log_probs, 1),
            None if centers[0] is None else torch.cat(centers, 1),
            torch.stack(coverage, 1) if coverage else None,          # (B, T, S)
        )

    def _forward_parallel(self, emb: Tensor, state: dict, memory: Memory) -> DecoderOutput:
        """Luong without input feeding: run the RNN over all steps, attend once."""
        B, T, _ = emb.shape
        out, _, _ = self._rnn(emb, state)                            # (B, T, Dd)
        positions = torch.arange(T, device=emb.device).expand(B, T)
        att = self.attention(out, state["keys"], memory.states, memory.mask, positions)
        vec = self.dropout(torch.tanh(self.readout(torch.cat([att.context, out], -1))))
        return DecoderOutput(self.output(vec), att.weights, None, att.log_prob, att.center)


def _select(value, index: Tensor):
    if isinstance(value, Tensor):
        return value.index_select(0, index)
    if isinstance(value, (tuple, list)):
        return type(value)(_select(v, index) for v in value)
    return value

