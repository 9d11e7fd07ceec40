"""One training update: forward, loss, backward, gradient clipping, the optimiser's step.

    result = train_step(model, batches, forward, loss, optimizer, grad_clip=1.0)
    result["loss"], result["grad_norm"]      # or {"finite": False}: the update was skipped

`forward(batch) -> (out, penalty)` runs the model on one batch (teacher
forcing: the decoder reads the target shifted right); `loss(batch, out,
penalty, counts) -> BatchLoss` is nmt.core.loss.training_loss on it. With
several batches (gradient accumulation, trainer.accumulate) their gradients
add up before the one step; each loss is divided by the whole update's counts.

Gradient clipping by norm: Pascanu, Mikolov & Bengio 2013, On the difficulty
of training recurrent neural networks, ICML, Sec. 3.2, Algorithm 1: where
||g|| > c, g <- c g / ||g|| (torch.nn.utils.clip_grad_norm_ over every
parameter together).
"""

from contextlib import nullcontext

import torch

from nmt.core.loss import Counts


class OneProcess:
    """What train_step asks of the processes that train together, for one process.
    nmt.training.distributed.Distributed answers the same for torchrun's ranks."""

    enabled, world_size = False, 1

    def sum(self, *values) -> list[float]:
        return [float(v) for v in values]

    def no_sync(self, model, last: bool):
        return nullcontext()

    def peers_alive(self):
        return nullcontext()


def update_counts(batches, ranks=OneProcess()) -> Counts:
    """The update's real target tokens (each batch's n_tgt_tokens, counted when it was
    made), sentences and linked target positions, all ranks together."""
    tokens = sum(b.n_tgt_tokens for b in batches)
    linked = sum(int((b.alignment.sum(-1) > 0).sum()) for b in batches if b.alignment is not None)
    return Counts(*map(int, ranks.sum(tokens, sum(len(b.src) for b in batches), linked)))


def train_step(model, batches, forward, loss, optimizer, *, grad_clip: float = 0.0, scaler=None,
               ranks=OneProcess()) -> dict:
    """One optimiser update over `batches` (B, S) / (B, T + 1) each, with their real token
    counts n_src_tokens and n_tgt_tokens (nmt.data.batching.Batch); a non-finite loss skips it.

    grad_clip: the largest L2 norm of all gradients together (0: none);
    scaler: fp16's torch.amp.GradScaler (none: the loss as it is). Under DDP
    (`ranks`) the gradients are all-reduced once, in the last backward, and
    averaged, so each loss is multiplied by the number of ranks to sum them.
    """
    scaler = scaler or torch.amp.GradScaler("cuda", enabled=False)   # a disabled scaler changes nothing
    counts = update_counts(batches, ranks)
    total_loss, total_nll, finite, aux = 0.0, 0.0, True, {}
    optimizer.zero_grad(set_to_none=True)
    for i, batch in enumerate(batches):
        with ranks.no_sync(model, last=i == len(batches) - 1):
            out, penalty = forward(batch)                       # out.logits (B, T, V)
            terms = loss(batch, out, penalty, counts)           # BatchLoss: scalar loss, nll (B, T)
            if not torch.isfinite(terms.loss):
                finite = False
                if not ranks.enabled:
                    break                                       # other ranks still reach the all-reduce
            with ranks.peers_alive():
                scaler.scale(terms.loss * ranks.world_size).backward()
        total_loss, total_nll = total_loss + float(terms.loss.detach()), total_nll + float(terms.nll.sum())
        for name, value in terms.terms.items():
            aux[name] = aux.get(name, 0.0) + value
    bad, total_loss, total_nll = ranks.sum(not finite, total_loss, total_nll)
    if bad:                                                     # one rank's bad loss skips the update on all
        optimizer.zero_grad(set_to_none=True)
        return {"finite": False}
    scaler.unscale_(optimizer)
    grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip or float("inf")))
    scaler.step(optimizer)
    scaler.update()
    aux = dict(zip(aux, ranks.sum(*aux.values())))              # every rank's share
    return {"finite": True, "loss": total_loss, "nll": total_nll / max(1, counts.tokens),
            "grad_norm": grad_norm, "tgt_tokens": counts.tokens,
            "src_tokens": sum(b.n_src_tokens for b in batches), "aux": aux}
