"""No positional information: a bag-of-words Transformer, for comparison."""

from nmt.models.positional.base import PositionalSpec


class NoPositions(PositionalSpec):
    """No positions at all.

    Self-attention is permutation-equivariant, so without positions the
    encoder sees its source as a bag of tokens; the decoder still knows
    order only through its causal mask. Useful as a baseline.
    """

    kind = "none"
