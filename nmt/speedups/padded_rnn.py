"""A (bidirectional) nn.GRU / nn.LSTM over right-padded sequences, without packing.

What nmt.core.rnn_encoder.run_packed (pack_padded_sequence) gives, computed
another way: on a packed batch ATen
narrows the input projection at every time step, and the backward of each
narrow writes a zero tensor of the whole projection, (sum of lengths, 3H):
O(S^2) memory traffic, 2.2x the time of the padded tensor for rnn_bahdanau's
encoder (python -m scripts.benchmarks.profile_ab encoder_pack). Here each direction of
each layer runs forward in time on a padded tensor:

    forward direction   x as it is: padding comes after the real tokens, so
                        every real position sees only real tokens before it;
                        the final state is the output at position len - 1
    backward direction  x reversed within each sequence's length,
                        rev[b, t] = x[b, len_b - 1 - t] for t < len_b (padding
                        stays put), run forward, outputs reversed back; its
                        final state is its output at len - 1 (token 0)

with the module's own weights (so checkpoints are unchanged) through the
same kernel nn.GRU calls (torch._VF), dropout between layers as nn.GRU has
it, and outputs 0 at padding, as pad_packed_sequence leaves them.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def _direction(rnn: nn.RNNBase, x: Tensor, layer: int, reverse: bool) -> Tensor:
    """One direction of one layer, forward in time: x (B, S, I) -> (B, S, H)."""
    suffix = "_reverse" if reverse else ""
    weights = [getattr(rnn, f"{kind}_l{layer}{suffix}")
               for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh") if rnn.bias or "weight" in kind]
    h0 = x.new_zeros(1, x.size(0), rnn.hidden_size)                        # (1, B, H)
    if isinstance(rnn, nn.LSTM):
        out, _, _ = torch._VF.lstm(x, (h0, h0), weights, rnn.bias, 1, 0.0, rnn.training, False, True)
    else:
        out, _ = torch._VF.gru(x, h0, weights, rnn.bias, 1, 0.0, rnn.training, False, True)
    return out


def run_padded(rnn: nn.RNNBase, x: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """x (B, S, I), lengths (B,) >= 1 -> outputs (B, S, dirs * H), 0 at padding,
    and final states (layers * dirs, B, H), ordered as nn.GRU orders them."""
    assert rnn.batch_first and not getattr(rnn, "proj_size", 0)
    B, S, _ = x.shape
    positions = torch.arange(S, device=x.device).expand(B, S)              # (B, S)
    real = positions < lengths[:, None]                                     # (B, S)
    # reversal within each length; an involution that leaves padding in place
    reverse_index = torch.where(real, lengths[:, None] - 1 - positions, positions)   # (B, S)
    last = (lengths - 1)[:, None, None]                                     # (B, 1, 1)
    finals, inp = [], x
    for layer in range(rnn.num_layers):
        if layer > 0 and rnn.dropout and rnn.training:
            inp = F.dropout(inp, rnn.dropout, training=True)
        outs = [_direction(rnn, inp, layer, reverse=False)]                 # (B, S, H)
        if rnn.bidirectional:
            index = reverse_index[:, :, None].expand(-1, -1, inp.size(-1))
            backward = _direction(rnn, inp.gather(1, index), layer, reverse=True)
            outs.append(backward.gather(1, reverse_index[:, :, None].expand_as(backward)))
        for out in outs:
            # the forward direction ends at len - 1; the backward one at token 0
            end = last if out is outs[0] else torch.zeros_like(last)
            finals.append(out.gather(1, end.expand(-1, 1, out.size(-1)))[:, 0])   # (B, H)
        inp = torch.cat(outs, -1) * real[:, :, None]                        # (B, S, dirs * H)
    return inp, torch.stack(finals)
