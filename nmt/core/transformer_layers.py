"""What the encoder's and the decoder's layers share.

Vaswani et al. 2017, Attention Is All You Need, NeurIPS, arXiv:1706.03762,
Sec. 3.1 (residual and layer norm), Sec. 3.3 (feed-forward) and Sec. 5.4
(residual dropout); Xiong et al. 2020, On Layer Normalization in the
Transformer Architecture, ICML, arXiv:2002.04745, Sec. 3 (pre-norm). Each
sub-layer (self-attention, cross-attention, feed-forward) sits in a residual
connection with a layer norm, before or after it:

    Post-norm (Vaswani et al.):  x = LN(x + Drop(Sub(x)))
    Pre-norm  (Xiong et al.):    x = x + Drop(Sub(LN(x)))

    FFN(x) = max(0, x W_1 + b_1) W_2 + b_2
"""

from torch import Tensor, nn

from nmt.core.errors import NmtError


def check_sizes(d_model: int, heads: int, where: str) -> None:
    """User sizes from config: d_model must split evenly into heads."""
    if heads < 1 or d_model % heads:
        raise NmtError(
            f"model.{where}.d_model={d_model} is not divisible by model.{where}.heads={heads}; "
            "pick sizes with d_model % heads == 0"
        )


def feed_forward(d_model: int, ff_size: int, dropout: float) -> nn.Sequential:
    """FFN(x), (B, T, D) -> (B, T, D), with dropout on the hidden layer."""
    return nn.Sequential(nn.Linear(d_model, ff_size), nn.ReLU(), nn.Dropout(dropout), nn.Linear(ff_size, d_model))


def layer_stack(layers: int, make_layer) -> nn.ModuleList:
    """`layers` layers, each from `make_layer()`, first layer first."""
    return nn.ModuleList(make_layer() for _ in range(layers))


class ResidualLayer(nn.Module):
    """The residual and norm rule around each sub-layer, pre- or post-norm."""

    def __init__(self, norm_first: bool, dropout: float):
        super().__init__()
        self.norm_first = norm_first
        self.drop = nn.Dropout(dropout)

    def _inp(self, x: Tensor, norm: nn.Module) -> Tensor:
        """What a sub-layer reads: LN(x) with pre-norm, x with post-norm."""
        return norm(x) if self.norm_first else x

    def _add(self, x: Tensor, out: Tensor, norm: nn.Module) -> Tensor:
        """Residual: x + Drop(out) with pre-norm, LN(x + Drop(out)) with post-norm."""
        return x + self.drop(out) if self.norm_first else norm(x + self.drop(out))
