"""A Transformer decoder step whose self-attention cache is written in place.

nmt.core's TransformerDecoderLayer.grow_cache grows each layer's cached keys
and values with torch.cat, a copy of the whole cache (B, H, t, Dh) at every
step, and beam search's reorder_state then copies it again (index_select) to
follow the beams. Here each layer keeps its keys and values in a buffer with
room for more steps, (B, H, capacity, Dh): a step writes its new key and
value at position t and attends to the view [:, :, :t+1]; a reorder copies
the t cached positions once, into a fresh buffer of the same capacity; a
full buffer is doubled (one copy). So a beam step copies the cache once
instead of twice.

Only grow_cache (the layer's), init_state (buffers from the start) and the
state's pick_cache are replaced; the step itself is the core's, so the
products, the attention and every other operation are the core's own calls
on the same numbers. The one difference, keys and values read from a
strided view instead of a contiguous copy, gives the same floats (SDPA and
the written-out attention read each key in the same order), so the logits,
weights and tokens are the core's bit for bit (tests/speedups/test_decode_cache.py).

    use_kept_cache(model)     # every TransformerDecoder in it, in place
"""

import torch
from torch import Tensor, nn

from nmt.core.outputs import Memory
from nmt.core.transformer_decoder import TransformerDecoder, TransformerDecoderLayer, TransformerState
from nmt.speedups.swap import swap_class

FIRST_CAPACITY = 16     # steps a new buffer has room for; doubled when full


class KeptCacheState(TransformerState):
    """TransformerState whose keys and values are per layer buffers (B, H, capacity, Dh),
    positions 0 .. t-1 written (t = position)."""

    def pick_cache(self, cache, index: Tensor):
        """Rows `index` of each layer's buffer (beam search): the t written positions
        copied once, into a fresh buffer of the same capacity (B', H, capacity, Dh)."""
        t = self.position
        out = []
        for buffer in cache:
            fresh = buffer.new_empty((index.numel(), *buffer.shape[1:]))            # (B', H, capacity, Dh)
            torch.index_select(buffer[:, :, :t], 0, index, out=fresh[:, :, :t])
            out.append(fresh)
        return out


def _written(buffer: Tensor, t: int, new: Tensor) -> Tensor:
    """`new` (B, H, T, Dh) written at positions t .. t+T-1 of `buffer` (B, H, capacity, Dh),
    which is first copied into a larger one (twice the capacity, or t+T) when it has no
    room; -> the buffer (the same or the larger one)."""
    T = new.size(2)
    if t + T > buffer.size(2):
        larger = buffer.new_empty((*buffer.shape[:2], max(2 * buffer.size(2), t + T), buffer.size(3)))
        larger[:, :, :t] = buffer[:, :, :t]
        buffer = larger
    buffer[:, :, t : t + T] = new
    return buffer


class KeptCacheLayer(TransformerDecoderLayer):
    """TransformerDecoderLayer whose grow_cache writes into buffers in place."""

    def grow_cache(self, cache, k, v, t: int):
        """As TransformerDecoderLayer.grow_cache; the cache carried is the pair of buffers,
        the keys and values attended to their views [:, :, :t+T]."""
        k_buf, v_buf = _written(cache[0], t, k), _written(cache[1], t, v)
        T = k.size(2)
        return k_buf[:, :, : t + T], v_buf[:, :, : t + T], (k_buf, v_buf)      # (B, H, t+T, Dh) views


class KeptCacheDecoder(TransformerDecoder):
    """TransformerDecoder whose init_state starts buffers of FIRST_CAPACITY steps
    (KeptCacheState); step(), forward() and the parameters are the core's."""

    def init_state(self, memory: Memory, init=None) -> KeptCacheState:
        core = super().init_state(memory, init)
        B, H, _, Dh = core.cross_keys[0].shape
        empty = lambda: core.cross_keys[0].new_empty((B, H, FIRST_CAPACITY, Dh))   # noqa: E731
        return KeptCacheState([empty() for _ in self.layers], [empty() for _ in self.layers],
                              core.cross_keys, core.cross_values, core.visible)


def use_kept_cache(model: nn.Module) -> int:
    """Every module of exactly TransformerDecoder in `model` becomes a KeptCacheDecoder,
    its layers KeptCacheLayers (the parameters untouched); returns how many decoders."""
    swap_class(model, TransformerDecoderLayer, KeptCacheLayer)
    return len(swap_class(model, TransformerDecoder, KeptCacheDecoder))
