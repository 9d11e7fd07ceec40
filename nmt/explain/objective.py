"""What the gradient methods explain: each target token's log-probability,
teacher-forced, as a function of the source embeddings.

    f_t(e) = log p(y_t | y_<t, x(e))        e (S, E) the source embeddings

The model reads the source ids as usual; a forward hook replaces the output
of its source embedding layer by the tensor being attributed (the first
call of that layer in a forward pass: the encoder reads the source before
the decoder reads anything), so the model's own forward() runs unchanged.
Row t of a batch is target token t's objective, so one batch of T copies
gives every target token's gradient at once.
"""

from typing import Callable, NamedTuple

import torch
from torch import Tensor

from nmt.base.errors import NmtError


class Objective(NamedTuple):
    """forward(embeddings (N, S, E), rows (N,) long) -> (N,): row n's f_rows[n];
    embeddings (1, S, E): the source's own; T target tokens."""
    forward: Callable[[Tensor, Tensor], Tensor]
    embeddings: Tensor
    T: int


def first_call_replaced(layer: torch.nn.Module, value: Tensor):
    """A forward hook for `layer` whose first call in a pass returns `value`
    (its shape checked) instead of the layer's output; later calls (a
    decoder sharing the embedding table) run as usual. Returns the handle."""
    seen = []

    def hook(module, args, output):
        if seen:
            return None
        seen.append(True)
        if output.shape != value.shape:
            raise NmtError(f"the source embedding layer gave {tuple(output.shape)}, not the attributed "
                           f"{tuple(value.shape)}: this model reads its source in a way nmt.explain does not know")
        return value

    return layer.register_forward_hook(hook)


def log_prob_objective(logits: Callable[[Tensor, Tensor], Tensor], layer: torch.nn.Module, src: Tensor,
                       tgt_in: Tensor, targets: Tensor) -> Objective:
    """`logits(src (N, S), tgt_in (N, T)) -> (N, T, V)` runs the model; `layer`
    its source embedding layer; src (1, S), tgt_in (1, T), targets (T,) ->
    the Objective of log p(targets[t] | tgt_in[:t+1], source)."""
    with torch.no_grad():
        embeddings = layer(src).detach()                             # (1, S, E)

    def forward(emb: Tensor, rows: Tensor) -> Tensor:
        n = emb.shape[0]
        handle = first_call_replaced(layer, emb)
        try:
            out = logits(src.expand(n, -1), tgt_in.expand(n, -1))  # (N, T, V)
        finally:
            handle.remove()
        logp = out.float().log_softmax(-1)                          # (N, T, V)
        return logp[torch.arange(n, device=emb.device), rows, targets[rows]]   # (N,)

    return Objective(forward, embeddings, int(targets.shape[0]))


def batch(objective: Objective) -> tuple[Tensor, Tensor]:
    """(embeddings (T, S, E): one copy per target token, rows (T,): 0 .. T-1)."""
    T = objective.T
    inputs = objective.embeddings.expand(T, -1, -1).clone().requires_grad_()   # (T, S, E)
    return inputs, torch.arange(T, device=inputs.device)
