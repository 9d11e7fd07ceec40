"""Encoder, bridge and decoder, glued: any encoder under any decoder.

Sutskever, Vinyals & Le 2014, Sequence to Sequence Learning with Neural
Networks, NeurIPS, arXiv:1409.3215, Sec. 2, with Bahdanau et al.'s
attention (ICLR 2015, arXiv:1409.0473, Sec. 3):

    p(y_1 .. y_T | x) = prod_t p(y_t | y_<t, memory),   memory = Encoder(x)

The bridge gives an RNN decoder its first state from the memory.
"""

from typing import NamedTuple

from torch import Tensor, nn

from nmt.core.masks import padding_mask
from nmt.core.outputs import DecoderOutput, Memory


class Encoded(NamedTuple):
    memory: Memory
    init: Tensor       # (B, Dd) the decoder's start vector from the bridge
    penalty: Tensor    # scalar, the bridge's regulariser (0 for most)


class Seq2Seq(nn.Module):
    """encode(src) -> Memory; decoder reads it through attention.

    When the encoder's state size differs from what the decoder's attention
    or cross-attention expects, `memory_proj` maps it (a Linear, else Identity).
    """

    def __init__(self, encoder: nn.Module, decoder: nn.Module, bridge: nn.Module,
                 memory_proj: nn.Module | None = None, pad_id: int = 0):
        super().__init__()
        self.encoder, self.decoder, self.bridge = encoder, decoder, bridge
        self.memory_proj = memory_proj or nn.Identity()
        self.pad_id = pad_id

    def encode(self, src: Tensor) -> Encoded:
        src_mask = padding_mask(src, self.pad_id)                  # (B, 1, S)
        out = self.encoder(src, src_mask)
        states = self.memory_proj(out.memory)                      # (B, S, Dm)
        init, penalty = self.bridge(out.memory, src_mask, out.last)
        return Encoded(Memory(states, src_mask), init, penalty)

    def forward(self, src: Tensor, tgt_in: Tensor, need_weights: bool = False):
        """src (B, S), tgt_in (B, T) -> DecoderOutput, bridge penalty."""
        enc = self.encode(src)
        state = self.decoder.init_state(enc.memory, enc.init)
        out: DecoderOutput = self.decoder(tgt_in, state, enc.memory, need_weights=need_weights)
        return out, enc.penalty

    def start(self, src: Tensor):
        """Encode for search: (memory, decoder state)."""
        enc = self.encode(src)
        return enc.memory, self.decoder.init_state(enc.memory, enc.init)
