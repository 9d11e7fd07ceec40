"""What a Transformer asks of a positional encoding.

A positional option in the config builds a small *spec* (no parameters):

    positional = hydra.utils.instantiate(cfg.model.positional)

Each Transformer then builds its own parameters from the spec, in two places:

    positional.input_layer(d_model)     -> InputPositions, once per embedding:
        added to the scaled token embeddings (sinusoidal, learned)
    positional.attention_layer(d_head)  -> AttentionPositions, once per
        self-attention layer: acts on queries, keys and logits
        (rotary, Shaw relative, ALiBi)

The bases below do nothing, so a kind overrides only the hooks it needs.
"""

from typing import ClassVar, Optional

from torch import Tensor, nn

from nmt.core.errors import NmtError


class InputPositions(nn.Module):
    """Adds nothing to the embeddings; the base of sinusoidal and learned."""

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        """x (B, T, D) at positions start .. start+T-1 -> (B, T, D)."""
        return x


class AttentionPositions(nn.Module):
    """Changes nothing in attention; the base of rotary, relative and ALiBi.

    Positions are absolute indices: q_pos (T,) of the queries, k_pos (S,) of
    the keys, so incremental decoding passes q_pos = [t], k_pos = 0 .. t.
    """

    # True when the value term needs the attention weights (no SDPA path).
    needs_weights: bool = False

    def rotate(self, x: Tensor, positions: Tensor) -> Tensor:
        """Queries or keys (B, H, T, Dh) at positions (T,) -> (B, H, T, Dh)."""
        return x

    def bias(self, q: Tensor, q_pos: Tensor, k_pos: Tensor) -> Optional[Tensor]:
        """Extra logits (B, H, T, S), before the 1/sqrt(Dh) scaling, or None."""
        return None

    def values(self, weights: Tensor, q_pos: Tensor, k_pos: Tensor) -> Optional[Tensor]:
        """Extra context (B, H, T, Dh) from weights (B, H, T, S), or None."""
        return None


class PositionalSpec:
    """A positional kind and its hyper-parameters; builds modules on request.

    Each yaml also names its `kind` (the builder reads it from the config);
    a constructor given another kind than its own raises NmtError.
    """

    kind: ClassVar[str] = "none"

    def __init__(self, kind: Optional[str] = None):
        if kind is not None and kind != self.kind:
            raise NmtError(
                f"model.positional.kind={kind!r} but _target_ builds {self.kind!r}; "
                "use model/positional=<kind> rather than editing kind"
            )

    def input_layer(self, d_model: int) -> InputPositions:
        return InputPositions()

    def attention_layer(self, d_head: int) -> AttentionPositions:
        return AttentionPositions()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"
