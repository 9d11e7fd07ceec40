"""Install the model speedups on a model nmt.core built.

    dropout      every nn.Dropout module becomes speedups.dropout.Dropout (same p,
                 same train/eval mode): the same maths, a mask cheaper to draw on a CPU
    padded_rnn   every RNN encoder runs speedups.padded_rnn.run_padded instead of
                 the core's run_packed: the same results without packing's backward cost

Neither adds, renames or removes a parameter or buffer, so a state dict loads
into the model with or without them.
"""

from torch import nn

from nmt.core.rnn_encoder import RNNEncoder
from nmt.speedups.dropout import Dropout
from nmt.speedups.padded_rnn import run_padded

MODEL_SPEEDUPS = ("dropout", "padded_rnn")


def install_model_speedups(model: nn.Module) -> list[str]:
    """Replace the plain pieces of `model` in place; returns the names of the
    speedups that found something to replace (a subset of MODEL_SPEEDUPS)."""
    found = set()
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Dropout:  # subclasses are someone else's
                cheap = Dropout(child.p)
                cheap.train(child.training)
                setattr(parent, name, cheap)
                found.add("dropout")
        if isinstance(parent, RNNEncoder):
            parent.run_rnn = run_padded
            found.add("padded_rnn")
    return [name for name in MODEL_SPEEDUPS if name in found]
