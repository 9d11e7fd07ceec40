"""Transformer decoder: causal self-attention, cross-attention, feed-forward.

Vaswani et al. 2017, Attention Is All You Need, arXiv:1706.03762, Sec. 3.1:

    y_0 = Embed(tgt_in) * sqrt(D) + PE
    y_l = Layer_l(y_{l-1}, memory)    (causal self-attn, cross-attn, FFN)
    logits = LN(y_L) E^T              (LN only with pre-norm; E the
                                       target embedding when tied)
"""

import math
from dataclasses import dataclass, replace
from typing import List, Optional

import torch
from torch import Tensor, nn

from nmt.core.errors import NmtError
from nmt.core.masks import target_mask
from nmt.core.outputs import DecoderOutput, Memory
from nmt.core.multihead import MultiHeadAttention
from nmt.core.positional.base import PositionalSpec
from nmt.core.positional.sinusoidal import SinusoidalPositions
from nmt.core.transformer_layers import ResidualLayer, check_sizes, layer_stack, feed_forward


@dataclass
class TransformerState:
    """What step() carries between tokens; t tokens decoded so far.

    keys, values:   per layer (B, H, t, Dh), self-attention cache of the
                    prefix (keys already rotated for rotary positions)
    cross_keys,
    cross_values:   per layer (B, H, S, Dh), projections of memory, once
    visible:        (B, t) bool, True where a prefix token is not padding
    position:       t, the position of the next token (same for the batch)
    source:         (B,) long, the memory row (sentence) each row's cross
                    keys and values were projected from; None: row b from b
    """

    keys: List[Tensor]
    values: List[Tensor]
    cross_keys: List[Tensor]
    cross_values: List[Tensor]
    visible: Tensor
    position: int = 0
    source: Optional[Tensor] = None

    def index_select(self, index: Tensor) -> "TransformerState":
        """Reorder or repeat along the batch (beam search).

        Rows from the same sentence hold identical cross keys and values, so
        when every row still reads its own sentence (a beam reordered within
        itself, each step) they are kept as they are, not copied again."""
        pick = lambda xs: [x.index_select(0, index) for x in xs]   # noqa: E731
        source = torch.arange(self.visible.size(0), device=index.device) if self.source is None else self.source
        new_source = source.index_select(0, index)                  # (B',)
        same = torch.equal(new_source, source)
        return replace(                                             # the same kind of state
            self,
            keys=self.pick_cache(self.keys, index),
            values=self.pick_cache(self.values, index),
            cross_keys=self.cross_keys if same else pick(self.cross_keys),
            cross_values=self.cross_values if same else pick(self.cross_values),
            visible=self.visible.index_select(0, index),
            source=new_source,
        )

    def pick_cache(self, cache: List[Tensor], index: Tensor) -> List[Tensor]:
        """Rows `index` of each layer's cached keys (or values), (B', H, t, Dh).
        (nmt.speedups.decode_cache overrides this one method.)"""
        return [x.index_select(0, index) for x in cache]


class TransformerDecoderLayer(ResidualLayer):
    """Causal self-attention, cross-attention to memory, feed-forward, each in
    the pre- or post-norm residual of `layers.ResidualLayer`."""

    def __init__(self, d_model, memory_dim, heads, ff_size, dropout, norm_first, position,
                 normaliser="softmax"):
        super().__init__(norm_first, dropout)
        self.self_attn = MultiHeadAttention(d_model, heads, dropout, position=position,
                                            normaliser=normaliser)
        self.cross_attn = MultiHeadAttention(d_model, heads, dropout, kv_dim=memory_dim,
                                             normaliser=normaliser)
        self.ff = feed_forward(d_model, ff_size, dropout)
        self.norm_self = nn.LayerNorm(d_model)
        self.norm_cross = nn.LayerNorm(d_model)
        self.norm_ff = nn.LayerNorm(d_model)

    def forward(self, x, q_pos, self_mask, cache, cross_kv, cross_mask, need_weights=False,
                self_weights: Optional[list] = None):
        """x (B, T, D) at positions q_pos (T,); self_mask (B, 1, T, t+T);
        cache (keys, values) of the t earlier tokens, each (B, H, t, Dh) (see grow_cache);
        cross_kv (B, H, S, Dh) twice; cross_mask (B, 1, 1, S)
        -> x (B, T, D), the cache grow_cache gives, weights (B, H, T, S) or None.
        A list given as `self_weights` gets the self-attention weights (B, H, T, t+T)."""
        h = self._inp(x, self.norm_self)
        q = self.self_attn.queries(h, q_pos)                        # (B, H, T, Dh)
        k, v = self.self_attn.keys_values(h, q_pos)                 # (B, H, T, Dh)
        t = self_mask.size(-1) - x.size(1)                          # earlier tokens: the mask has t+T keys
        k, v, cache = self.grow_cache(cache, k, v, t)               # (B, H, t+T, Dh) each
        k_pos = torch.arange(t + x.size(1), device=x.device)
        out, weights = self.self_attn.attend(q, k, v, self_mask, q_pos, k_pos,
                                             need_weights=self_weights is not None)
        if self_weights is not None:
            self_weights.append(weights)
        x = self._add(x, out, self.norm_self)

        h = self._inp(x, self.norm_cross)
        q = self.cross_attn.queries(h)
        out, weights = self.cross_attn.attend(q, *cross_kv, cross_mask, need_weights=need_weights)
        x = self._add(x, out, self.norm_cross)

        x = self._add(x, self.ff(self._inp(x, self.norm_ff)), self.norm_ff)
        return x, cache, weights

    def grow_cache(self, cache, k, v, t: int):
        """The self-attention cache with the new tokens' keys and values appended.

        cache (keys, values): positions 0 .. t-1 of each (B, H, >=t, Dh) are the
        t earlier tokens'; k, v (B, H, T, Dh) the new tokens'
        -> keys, values (B, H, t+T, Dh) to attend to, and the cache to carry:
        here that same pair, a fresh copy (torch.cat) at every step.
        (nmt.speedups.decode_cache overrides this one method.)"""
        keys = torch.cat((cache[0][:, :, :t], k), dim=2)            # (B, H, t+T, Dh)
        values = torch.cat((cache[1][:, :, :t], v), dim=2)
        return keys, values, (keys, values)


class TransformerDecoder(nn.Module):
    """Transformer decoder.

    step() decodes one token from cached keys and values, so no step
    recomputes the prefix; forward() is the teacher-forced equivalent and
    gives the same logits. `weights` is the cross-attention of layer
    `attention_layer`, averaged over heads, or head `attention_head`.
    Cross-attention projects keys and values from memory_dim to d_model.
    `normaliser` (softmax, sparsemax, entmax15) serves self- and
    cross-attention, in forward() and in cached step() alike; the yaml takes
    it from model.attention.normaliser.
    """

    explicit_attention = False      # step(): attention written out, not SDPA (set by nmt.speedups.decode_kernels)

    def __init__(
        self,
        vocab_size: int,
        memory_dim: int,
        d_model: int = 256,
        layers: int = 3,
        heads: int = 4,
        ff_size: int = 1024,
        dropout: float = 0.1,
        norm_first: bool = True,
        positional: Optional[PositionalSpec] = None,
        pad_id: int = 0,
        tie_embeddings: bool = True,
        attention_layer: int = -1,
        attention_head: Optional[int] = None,
        normaliser: str = "softmax",
    ):
        super().__init__()
        check_sizes(d_model, heads, "decoder")
        if not -layers <= attention_layer < layers:
            raise NmtError(
                f"model.decoder.attention_layer={attention_layer} but the decoder has "
                f"{layers} layers; pick one in [-{layers}, {layers - 1}]"
            )
        if attention_head is not None and not 0 <= attention_head < heads:
            raise NmtError(
                f"model.decoder.attention_head={attention_head} but there are {heads} heads; "
                f"pick one in [0, {heads - 1}] or null for the mean"
            )
        positional = SinusoidalPositions() if positional is None else positional
        self.d_model = d_model
        self.pad_id = pad_id
        self.attention_layer = attention_layer % layers
        self.attention_head = attention_head
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        nn.init.normal_(self.embed.weight, std=d_model**-0.5)
        nn.init.zeros_(self.embed.weight[pad_id])
        self.position = positional.input_layer(d_model)
        self.drop = nn.Dropout(dropout)
        self.layers = layer_stack(layers, lambda: TransformerDecoderLayer(
            d_model, memory_dim, heads, ff_size, dropout, norm_first,
            positional.attention_layer(d_model // heads), normaliser))
        self.final_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.out = nn.Linear(d_model, vocab_size, bias=False)
        if tie_embeddings:
            self.out.weight = self.embed.weight

    def init_state(self, memory: Memory, init=None) -> TransformerState:
        """Project memory once per layer; empty self-attention cache. `init`
        (the bridge output) is ignored: Transformers start from memory alone."""
        B = memory.states.size(0)
        cross = [layer.cross_attn.keys_values(memory.states) for layer in self.layers]
        empty = cross[0][0][:, :, :0]                               # (B, H, 0, Dh)
        return TransformerState(
            keys=[empty] * len(self.layers),
            values=[empty] * len(self.layers),
            cross_keys=[k for k, _ in cross],
            cross_values=[v for _, v in cross],
            visible=torch.ones(B, 0, dtype=torch.bool, device=memory.states.device),
        )

    def reorder_state(self, state: TransformerState, index: Tensor) -> TransformerState:
        return state.index_select(index)

    def _run(self, y, start, caches, state, self_mask, cross_mask, weight_layers,
             self_weights=None):
        """Embed y (B, T) at positions start .. start+T-1, run every layer on
        top of `caches` (per layer (keys, values) of the t earlier tokens)
        -> logits (B, T, V), new caches, cross weights (B, H, T, S) of the
        layers in weight_layers (None elsewhere). A list `self_weights` gets
        every layer's self-attention weights."""
        x = self.embed(y) * math.sqrt(self.d_model)                 # (B, T, D)
        x = self.drop(self.position(x, start=start))
        q_pos = torch.arange(start, start + y.size(1), device=y.device)
        new_caches, weights = [], []
        for i, layer in enumerate(self.layers):
            cross_kv = (state.cross_keys[i], state.cross_values[i])
            x, cache, w = layer(
                x, q_pos, self_mask, caches[i], cross_kv, cross_mask,
                need_weights=i in weight_layers, self_weights=self_weights,
            )
            new_caches.append(cache)
            weights.append(w)
        return self.out(self.final_norm(x)), new_caches, weights    # (B, T, V)

    def _shown(self, layer_weights: Tensor) -> Tensor:
        """(B, H, T, S) -> (B, T, S): mean over heads or the chosen head."""
        if self.attention_head is None:
            return layer_weights.mean(dim=1)
        return layer_weights[:, self.attention_head]

    def step(self, y_prev: Tensor, state: TransformerState, memory: Memory):
        """y_prev (B,) long -> logits (B, V), next state, weights (B, S).

        With `explicit_attention` set, every attention of the step is written
        out (q k^T, the normaliser, times v: the path that gives weights)
        rather than SDPA's fused kernel, which is slower for one query on a
        CPU; the floats differ in the last bits (nmt.speedups.decode_kernels)."""
        y = y_prev[:, None]                                         # (B, 1)
        visible = torch.cat((state.visible, y != self.pad_id), dim=1)   # (B, t+1)
        self_mask = visible[:, None, None, :]                       # (B, 1, 1, t+1)
        explicit = self.explicit_attention
        logits, caches, weights = self._run(
            y, state.position, list(zip(state.keys, state.values)), state,
            self_mask, memory.mask[:, None], range(len(self.layers)) if explicit else {self.attention_layer},
            self_weights=[] if explicit else None,
        )
        state = replace(                                            # the same kind of state, one token on
            state,
            keys=[k for k, _ in caches],
            values=[v for _, v in caches],
            visible=visible,
            position=state.position + 1,
        )
        shown = self._shown(weights[self.attention_layer])[:, 0]     # (B, S)
        return logits[:, 0], state, shown

    def forward(
        self,
        tgt_in: Tensor,
        state: Optional[TransformerState],
        memory: Memory,
        need_weights: bool = False,
        self_weights: Optional[list] = None,
    ) -> DecoderOutput:
        """Teacher forcing: tgt_in (B, T) -> logits (B, T, V), weights (B, T, S)
        and layers (B, L, H, T, S) when need_weights, else None.
        A list given as `self_weights` gets each layer's causal self-attention
        weights (B, H, T, T), first layer first (for heatmaps).

        Uses the cross-attention keys of `state` (from init_state, built on
        the fly if None) and always starts at position 0 with no prefix."""
        if state is None:
            state = self.init_state(memory)
        empty = [(k[:, :, :0], v[:, :, :0]) for k, v in zip(state.keys, state.values)]
        self_mask = target_mask(tgt_in, self.pad_id)[:, None]       # (B, 1, T, T)
        weight_layers = range(len(self.layers)) if need_weights else ()
        logits, _, weights = self._run(
            tgt_in, 0, empty, state, self_mask, memory.mask[:, None], weight_layers, self_weights
        )
        if not need_weights:
            return DecoderOutput(logits)
        layers = torch.stack(weights, dim=1)                        # (B, L, H, T, S)
        return DecoderOutput(logits, self._shown(layers[:, self.attention_layer]), layers)
