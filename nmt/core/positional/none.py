"""No positional information: a bag-of-words Transformer, for comparison.

Vaswani et al. 2017, Attention Is All You Need, NeurIPS, arXiv:1706.03762,
Sec. 3.5: "since our model contains no recurrence and no convolution, in
order for the model to make use of the order of the sequence, we must inject
some information about the relative or absolute position of the tokens".
This option injects none:

    x_0 = Embed(tokens) * sqrt(D)          (no PE term)
"""

from nmt.core.positional.base import PositionalSpec


class NoPositions(PositionalSpec):
    """No positions at all.

    Self-attention is permutation-equivariant, so without positions the
    encoder sees its source as a bag of tokens; the decoder still knows
    order only through its causal mask. Useful as a baseline.
    """

    kind = "none"
