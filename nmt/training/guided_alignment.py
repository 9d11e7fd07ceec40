"""Guided alignment's settings: which attention it supervises (the loss itself is
nmt.core.loss.guided_alignment_loss)."""

from dataclasses import dataclass

from torch import Tensor, nn

from nmt.base.errors import NmtError


@dataclass(frozen=True)
class GuidedAlignmentLoss:
    """Guided alignment loss (trainer.guided_alignment: weight, layer, head).

    Garg, Peitz, Nallasamy & Paulik 2019, Jointly Learning to Align and
    Translate with Transformer Models, EMNLP, arXiv:1909.02074, the
    alignment loss of their multi-task training: the cross-entropy between
    the rows of the normalised guide alignment and the attention rows,

        L_a = -1/|T| sum over t in T of sum_i G_t,i log a_t,i

    a (B, T, S): the supervised attention, head `head` of layer `layer`'s
    cross-attention in a Transformer decoder (Garg et al. use the
    penultimate layer, layer -2), an RNN decoder's one attention otherwise.
    G (B, T, S): the given alignment with each row normalised to sum 1; a
    row of zeros means that target position has no link, and T is the set
    of positions that have one (nmt.core.loss.guided_alignment_loss computes
    it). The trainer adds weight * L_a to the token loss, |T| counted over
    the whole update.
    """

    weight: float = 0.0
    layer: int = -2
    head: int = 0

    def attention(self, decoder: nn.Module, out) -> Tensor:
        """The attention that guided alignment supervises, (B, T, S).

        Transformer decoders: head `head` of the cross-attention of layer
        `layer` (negative counts from the top), read from DecoderOutput.layers
        (B, L, H, T, S). RNN decoders: their one attention (DecoderOutput.weights;
        the mean over heads for multi-head attention); layer and head are not used.
        """
        if self.check(decoder):
            return out.layers[:, int(self.layer), int(self.head)]    # (B, T, S)
        return out.weights                                           # (B, T, S)

    def check(self, decoder: nn.Module) -> bool:
        """Checks layer and head against `decoder` (NmtError naming the key);
        True for a Transformer decoder, False for an RNN's (not checked)."""
        blocks = getattr(decoder, "layers", None)
        if not isinstance(blocks, nn.ModuleList):                # an RNN decoder
            return False
        L = len(blocks)
        H = blocks[0].cross_attn.heads
        layer, head = self.layer, self.head
        if int(layer) != layer or not -L <= layer < L:
            raise NmtError(f"trainer.guided_alignment.layer={layer} but the decoder has {L} layer(s); "
                           f"pick one in [-{L}, {L - 1}]")
        if int(head) != head or not 0 <= head < H:
            raise NmtError(f"trainer.guided_alignment.head={head} but the decoder has {H} heads; "
                           f"pick one in [0, {H - 1}]")
        return True
