"""trainer.cuda_graphs=true: each training update's forward, loss, backward and
gradient clipping recorded once per batch shape (B, S, T) as a CUDA graph and
replayed with one launch; the fused optimiser step follows it.

A small model's update is a thousand short kernels, and on a fast GPU the host
that launches them is the bottleneck (benchmarks/gpu/README.md: 3.2 ms of GPU
work in a 20 ms update). A CUDA graph (the CUDA Programming Guide's "CUDA
Graphs"; `torch.cuda.graph`) launches the recorded kernels in one call. The
update reads the device once: its loss, summed NLL, gradient norm and token
counts come back together, and a non-finite loss skips the optimiser step as
the eager update does. Batches padded to a multiple (data.pad_to_multiple=8)
have few shapes, so few graphs are recorded; all of them share one memory pool.

One batch an update on one GPU, in fp32 or bf16, without the losses that need
more than the model's output (coverage, guided alignment, hard attention):
nmt.training.config_checks refuses the rest in one line. It replaces
nmt.core.step.train_step (trainer.speedups=auto with trainer.cuda_graphs=true);
the loss is nmt.core.loss.training_loss with the fused label-smoothed loss.
"""

import math

import torch
from torch import Tensor

from nmt.core.loss import Counts, LossWeights, training_loss
from nmt.base.errors import NmtError
from nmt.speedups.compile import compile_errors
from nmt.speedups.fused_loss import fused_label_smoothed_nll

PAD = 0   # the padding id (nmt.data.batching.PAD_ID)

def batch_statistics(forward, params: list[Tensor], src: Tensor, tgt: Tensor, smoothing: float,
                     clip: float) -> Tensor:
    """One batch's forward, loss, backward and gradient clipping with no host
    synchronisation. src (B, S), tgt (B, T + 1) -> (loss, summed NLL, gradient
    norm, target tokens, source tokens) as one fp32 tensor (5,). Each of
    `params` that the loss reaches gets its clipped gradient written into its
    .grad (allocated on the first call, which must run eagerly). The loss is the
    eager update's: label-smoothed, normalised by the batch's target tokens, the
    token count a tensor (no host read). `forward` runs under the run's autocast,
    without its cast cache (the cache would outlive a graph's capture)."""
    labels = tgt[:, 1:]                                                   # (B, T)
    tokens = (labels != PAD).sum()
    out, penalty = forward(src, tgt[:, :-1])
    if out.log_prob is not None:
        raise NmtError("trainer.cuda_graphs=true cannot record hard attention's sampled update; "
                       "train it without trainer.cuda_graphs")
    terms = training_loss(out, labels, PAD, LossWeights(smoothing), Counts(tokens, len(src)), penalty=penalty,
                          token_losses=fused_label_smoothed_nll)
    loss, nll = terms.loss, terms.nll                                     # nll (B, T)
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    used = [(p, g) for p, g in zip(params, grads) if g is not None]   # the eager update's p.grad=None stay so
    for p, g in used:
        if p.grad is None:             # the first (eager) run allocates what every replay overwrites
            p.grad = torch.empty_like(p)
    torch._foreach_copy_([p.grad for p, _ in used], [g for _, g in used])
    norm = torch.nn.utils.clip_grad_norm_([p for p, _ in used], clip or float("inf"))
    return torch.stack([loss.detach().float(), nll.sum().float(), norm.float(), tokens.float(),
                        (src != PAD).sum().float()])


class GraphedUpdate:
    """Trainer.train_update for trainer.cuda_graphs=true: one graph per batch shape.
    `forward(src, tgt_in)`: the model under the run's autocast without its cast cache."""

    def __init__(self, model, forward, optimizer, schedule, settings, device: torch.device):
        self.forward, self.optimizer, self.schedule = forward, optimizer, schedule
        self.settings, self.device = settings, device
        self.params = [p for p in model.parameters() if p.requires_grad]
        optimizer.zero_grad(set_to_none=True)    # gradients get fixed addresses that every graph writes
        self.graphs: dict[tuple, tuple[torch.cuda.CUDAGraph, Tensor, Tensor, Tensor]] = {}
        self.pool = None               # the first graph's memory pool, shared by the others

    def statistics(self, src: Tensor, tgt: Tensor) -> Tensor:
        s = self.settings
        with compile_errors(s.compile):     # trainer.compile=true: torch.compile's failure is one line
            return batch_statistics(self.forward, self.params, src, tgt, s.label_smoothing, s.grad_clip)

    def record(self, src: Tensor, tgt: Tensor) -> tuple:
        """A graph of this shape's update, over static copies of `src` and `tgt`. It is
        run once eagerly first, on a side stream, for what a capture cannot do (lazy
        initialisation, choosing kernels); that run's gradients are overwritten by the replay,
        and its random draws are undone."""
        src, tgt = src.to(self.device), tgt.to(self.device)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        rng = torch.cuda.get_rng_state(self.device)   # the warm-up's dropout draws are given back:
        with torch.cuda.stream(side):                 # replays alone move the generator, so a resumed
            self.statistics(src, tgt)                 # run (which records its graphs anew) draws the same
        torch.cuda.current_stream(self.device).wait_stream(side)
        torch.cuda.set_rng_state(rng, self.device)
        graph, first = torch.cuda.CUDAGraph(), []
        try:
            with torch.cuda.graph(graph, pool=self.pool, capture_error_mode="thread_local"):
                try:
                    stats = self.statistics(src, tgt)
                except Exception as error:       # ending the capture raises again, naming no cause
                    first.append(error)
                    raise
        except Exception as error:  # noqa: BLE001 - the first failure decides what is said
            error = first[0] if first else error
            if isinstance(error, NmtError) or not isinstance(error, RuntimeError):
                raise error from None
            detail = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
            raise NmtError(f"trainer.cuda_graphs=true: this model's update could not be recorded as a "
                           f"CUDA graph ({detail}); train without trainer.cuda_graphs") from None
        self.pool = self.pool or graph.pool()
        return graph, src, tgt, stats

    def train_update(self, batches, budget_fraction) -> dict:
        """The update of one batch: its graph replayed (recorded first for a new shape),
        then, if the loss is finite, the optimiser step and the schedule's."""
        (batch,) = batches
        key = (*batch.src.shape, *batch.tgt.shape)
        if key in self.graphs:
            graph, src, tgt, stats = self.graphs[key]
            src.copy_(batch.src.pin_memory(), non_blocking=True)
            tgt.copy_(batch.tgt.pin_memory(), non_blocking=True)
        else:
            graph, src, tgt, stats = self.graphs[key] = self.record(batch.src, batch.tgt)
        graph.replay()
        loss, nll, grad_norm, tokens, src_tokens = stats.tolist()    # the update's one synchronisation
        if not math.isfinite(loss):
            return {"finite": False}
        self.optimizer.step()
        self.schedule.step_update(budget_fraction())
        return {"finite": True, "loss": loss, "nll": nll / max(1.0, tokens), "grad_norm": grad_norm,
                "tgt_tokens": int(tokens), "src_tokens": int(src_tokens), "aux": {}}
