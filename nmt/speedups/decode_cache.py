"""A Transformer decoder step whose self-attention cache is written in place.

nmt.core's TransformerDecoder.step grows each layer's cached keys and values
with torch.cat, a copy of the whole cache (B, H, t, Dh) at every step, and
beam search's reorder_state then copies it again (index_select) to follow
the beams. Here each layer keeps its keys and values in a buffer with room
for more steps, (B, H, capacity, Dh): a step writes its one new key and
value at position t and attends to the view [:, :, :t+1]; a reorder copies
the t cached positions once, into a fresh buffer of the same capacity; a
full buffer is doubled (one copy). So a beam step copies the cache once
instead of twice.

The products, the attention and every other operation are the core's own
calls on the same numbers; the one difference, keys and values read from a
strided view instead of a contiguous copy, gives the same floats (SDPA and
the written-out attention read each key in the same order), so the logits,
weights and tokens are the core's bit for bit (tests/speedups/test_decode_cache.py).

    use_kept_cache(model)     # every TransformerDecoder in it, in place
"""

import math
from dataclasses import dataclass
from typing import List, Optional

import torch
from torch import Tensor, nn

from nmt.core.outputs import Memory
from nmt.core.transformer_decoder import TransformerDecoder

FIRST_CAPACITY = 16     # steps a new buffer has room for; doubled when full


@dataclass
class KeptCacheState:
    """What KeptCacheDecoder.step carries; t = position tokens decoded so far.

    keys, values:  per layer (B, H, capacity, Dh), positions 0 .. t-1 written
    cross_keys, cross_values, visible, source: as TransformerState's
    """

    keys: List[Tensor]
    values: List[Tensor]
    cross_keys: List[Tensor]
    cross_values: List[Tensor]
    visible: Tensor
    position: int = 0
    source: Optional[Tensor] = None

    def index_select(self, index: Tensor) -> "KeptCacheState":
        """Reorder or repeat along the batch (beam search): the t written positions of
        each buffer copied once; cross keys and values kept when every row still
        reads its own sentence, as TransformerState.index_select does."""
        t = self.position

        def pick(buffers):
            out = []
            for buffer in buffers:
                fresh = buffer.new_empty((index.numel(), *buffer.shape[1:]))          # (B', H, capacity, Dh)
                torch.index_select(buffer[:, :, :t], 0, index, out=fresh[:, :, :t])
                out.append(fresh)
            return out

        source = torch.arange(self.visible.size(0), device=index.device) if self.source is None else self.source
        new_source = source.index_select(0, index)                                  # (B',)
        same = torch.equal(new_source, source)
        cross = (self.cross_keys, self.cross_values) if same else (
            [x.index_select(0, index) for x in self.cross_keys], [x.index_select(0, index) for x in self.cross_values])
        return KeptCacheState(pick(self.keys), pick(self.values), *cross, self.visible.index_select(0, index),
                              self.position, new_source)


def _written(buffer: Tensor, t: int, new: Tensor) -> Tensor:
    """`new` (B, H, 1, Dh) written at position t of `buffer` (B, H, capacity, Dh),
    which is doubled first when full; -> the buffer (the same or the larger one)."""
    if t == buffer.size(2):
        larger = buffer.new_empty((*buffer.shape[:2], max(2 * t, FIRST_CAPACITY), buffer.size(3)))
        larger[:, :, :t] = buffer
        buffer = larger
    buffer[:, :, t : t + 1] = new
    return buffer


def _layer_step(layer, x, q_pos, self_mask, buffers, t, cross_kv, cross_mask, need_weights, self_weights):
    """TransformerDecoderLayer.forward for one token (x (B, 1, D)) on kept buffers:
    the same calls, with the new key and value written in place instead of cat."""
    h = layer._inp(x, layer.norm_self)
    q = layer.self_attn.queries(h, q_pos)                           # (B, H, 1, Dh)
    k, v = layer.self_attn.keys_values(h, q_pos)                    # (B, H, 1, Dh)
    k_buf, v_buf = _written(buffers[0], t, k), _written(buffers[1], t, v)
    k, v = k_buf[:, :, : t + 1], v_buf[:, :, : t + 1]               # (B, H, t+1, Dh) views
    k_pos = torch.arange(t + 1, device=x.device)
    out, weights = layer.self_attn.attend(q, k, v, self_mask, q_pos, k_pos, need_weights=self_weights is not None)
    if self_weights is not None:
        self_weights.append(weights)
    x = layer._add(x, out, layer.norm_self)

    h = layer._inp(x, layer.norm_cross)
    q = layer.cross_attn.queries(h)
    out, weights = layer.cross_attn.attend(q, *cross_kv, cross_mask, need_weights=need_weights)
    x = layer._add(x, out, layer.norm_cross)

    x = layer._add(x, layer.ff(layer._inp(x, layer.norm_ff)), layer.norm_ff)
    return x, (k_buf, v_buf), weights


class KeptCacheDecoder(TransformerDecoder):
    """TransformerDecoder whose step() and reorder_state() keep the self-attention
    cache in buffers (KeptCacheState); forward() and the parameters are the core's."""

    def init_state(self, memory: Memory, init=None) -> KeptCacheState:
        core = super().init_state(memory, init)
        B, H, _, Dh = core.cross_keys[0].shape
        empty = lambda: core.cross_keys[0].new_empty((B, H, FIRST_CAPACITY, Dh))   # noqa: E731
        return KeptCacheState([empty() for _ in self.layers], [empty() for _ in self.layers],
                              core.cross_keys, core.cross_values, core.visible)

    def step(self, y_prev: Tensor, state, memory: Memory):
        """As TransformerDecoder.step: y_prev (B,) long -> logits (B, V), next state, weights (B, S)."""
        if not isinstance(state, KeptCacheState):          # a core state (forward's, or a caller's own)
            return super().step(y_prev, state, memory)
        y = y_prev[:, None]                                         # (B, 1)
        visible = torch.cat((state.visible, y != self.pad_id), dim=1)   # (B, t+1)
        self_mask = visible[:, None, None, :]                       # (B, 1, 1, t+1)
        explicit = self.explicit_attention
        weight_layers = range(len(self.layers)) if explicit else {self.attention_layer}
        self_weights = [] if explicit else None
        t = state.position
        x = self.embed(y) * math.sqrt(self.d_model)                 # (B, 1, D)
        x = self.drop(self.position(x, start=t))
        q_pos = torch.arange(t, t + 1, device=y.device)
        keys, values, weights = [], [], []
        for i, layer in enumerate(self.layers):
            x, (k, v), w = _layer_step(layer, x, q_pos, self_mask, (state.keys[i], state.values[i]), t,
                                       (state.cross_keys[i], state.cross_values[i]), memory.mask[:, None],
                                       i in weight_layers, self_weights)
            keys.append(k)
            values.append(v)
            weights.append(w)
        logits = self.out(self.final_norm(x))                       # (B, 1, V)
        state = KeptCacheState(keys, values, state.cross_keys, state.cross_values, visible, t + 1, state.source)
        shown = self._shown(weights[self.attention_layer])[:, 0]     # (B, S)
        return logits[:, 0], state, shown


def use_kept_cache(model: nn.Module) -> int:
    """Every module of exactly TransformerDecoder in `model` becomes a KeptCacheDecoder
    (its parameters untouched); returns how many."""
    swapped = 0
    for module in model.modules():
        if type(module) is TransformerDecoder:
            module.__class__ = KeptCacheDecoder
            swapped += 1
    return swapped
