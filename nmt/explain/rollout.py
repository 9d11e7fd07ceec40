"""Attention rollout: how much of each source token reaches the decoder state
that predicts each target token, following the attention of every layer
and the residual connections around it.

Abnar & Zuidema 2020, Quantifying Attention Flow in Transformers, ACL
(arXiv:2005.00928), Sec. 3 (rollout). Each residual attention sub-layer
mixes tokens by half its attention (mean over heads) and keeps half of
each token itself:

    A^_l = 0.5 mean_h A_l,h + 0.5 I
    encoder:  R = A^_L ... A^_2 A^_1                         (S, S)

The paper rolls out one stack; for an encoder-decoder we apply the same
rule to each decoder sub-layer, carrying two parts of every decoder state:
D (T, T), the share that came from the decoder's inputs, and X (T, S),
the share that came from the source tokens (through R):

    start            D = I, X = 0
    self-attention   M = 0.5 mean_h S_l,h + 0.5 I;  D <- M D,  X <- M X
    cross-attention  D <- 0.5 D;  X <- 0.5 X + 0.5 (mean_h C_l,h) R
    feed-forward     mixes no tokens: unchanged

Each row of [D X] keeps sum 1 (every step is a mixture of mixtures); the
rollout shown is X, row t the source share of the state that predicts
target token t (its rows sum to that share, at most 1).
"""

import torch
from torch import Tensor


def residual_mix(attention: Tensor) -> Tensor:
    """attention (H, N, N) -> 0.5 mean_h attention + 0.5 I  (N, N)."""
    n = attention.shape[-1]
    return 0.5 * attention.float().mean(0) + 0.5 * torch.eye(n, device=attention.device)


def encoder_rollout(encoder_self: Tensor) -> Tensor:
    """encoder_self (L, H, S, S) -> R (S, S): R = A^_L ... A^_1 (identity for L = 0)."""
    S = encoder_self.shape[-1]
    rolled = torch.eye(S, device=encoder_self.device)
    for layer in encoder_self:                                       # (H, S, S), first layer first
        rolled = residual_mix(layer) @ rolled
    return rolled


def rollout(encoder_self: Tensor, decoder_self: Tensor | None, cross: Tensor) -> Tensor:
    """encoder_self (Le, H, S, S), decoder_self (Ld, H, T, T) or None (no
    self-attention), cross (Ld, H, T, S) -> X (T, S), the source share of
    each target row (module docstring)."""
    source = encoder_rollout(encoder_self)                           # (S, S)
    T = cross.shape[-2]
    from_inputs = torch.eye(T, device=cross.device)                  # D (T, T)
    from_source = torch.zeros(T, source.shape[0], device=cross.device)   # X (T, S)
    for layer in range(cross.shape[0]):
        if decoder_self is not None:
            mix = residual_mix(decoder_self[layer])                  # (T, T)
            from_inputs, from_source = mix @ from_inputs, mix @ from_source
        reads = cross[layer].float().mean(0) @ source                # (T, S)
        from_inputs, from_source = 0.5 * from_inputs, 0.5 * from_source + 0.5 * reads
    return from_source
