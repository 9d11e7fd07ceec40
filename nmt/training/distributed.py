"""Data-parallel training over the processes `torchrun` starts.

    torchrun --nproc_per_node=2 -m nmt.train experiment=quickstart hydra.run.dir=outputs/ddp

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT in
each process. Every rank builds the same model (DistributedDataParallel also
broadcasts rank 0's weights), reads every world_size-th batch of the epoch,
and all-reduces the gradients, so one update sees world_size batches:

    update k on rank r  = batch k * world_size + r of the epoch's plan
    gradient            = sum over ranks of d(sum of token losses) / (tokens of all ranks)

which is exactly a single process with `trainer.accumulate=world_size` (up
to the order of floating-point sums). Each process that takes part in a
collective must reach it, so every decision that could differ between ranks
is agreed by a collective first: whether every rank still has a batch (the
epoch ends at the shortest share), whether the loss was finite, a stop
signal, the time budget; validation scores come from rank 0. Rank 0 alone
logs, validates and writes checkpoints; the others wait for it.

A rank that dies or stops is noticed within a bounded time: a collective
between updates fails after `trainer.peer_timeout_s` (the process group's
timeout), a wait for rank 0's own work (its validation, checkpoints, the
vocabulary) after 30 minutes (a second group over the same ranks). Either
failure raises `PeerLost`, after which rank 0 saves last.pt and every rank
ends with one line.

A backend's worker threads may still hold a collective's tensors after the
collective returned (gloo's barrier keeps the works before it). Python keeps
each such tensor until the backend lets go of it (`_Lent`), and `close`
waits for that: a tensor whose last owner is a worker thread needs the GIL
to die, and DDP's Reducer, when it drops the process group last, joins
those threads holding the GIL, which would hang the rank at exit.

With one process (no torchrun) every method is a no-op and nothing is
initialised.
"""

import logging
import math
import os
import pickle
import re
import sys
import time
from contextlib import contextmanager, nullcontext
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

from nmt.base.errors import NmtError

MAIN_WORK_TIMEOUT = timedelta(minutes=30)   # waits for rank 0's validation, checkpoints, vocabulary
_lost = []    # a PeerLost was raised: the backend's threads may never come back (see `close`)


class PeerLost(NmtError):
    """A collective failed because another rank died, stopped or timed out."""


class Distributed:
    """This process's rank among `world_size`, and the collectives the trainer needs."""

    def __init__(self, rank: int = 0, world_size: int = 1, local_rank: int = 0,
                 device: torch.device = torch.device("cpu"), main_work_group=None):
        self.rank, self.world_size, self.local_rank = rank, world_size, local_rank
        self.device = device
        self.main_work_group = main_work_group   # the same ranks, waiting longer (MAIN_WORK_TIMEOUT)
        self.lent = _Lent()   # the tensors of collectives the backend may still hold

    @classmethod
    def start(cls, device: torch.device, peer_timeout_s: float = 60.0) -> "Distributed":
        """From torchrun's environment: join the process group (nccl on GPUs, gloo on
        CPUs), whose collectives give up on a silent rank after `peer_timeout_s`."""
        try:
            rank = int(os.environ.get("RANK", 0))
            world_size = int(os.environ.get("WORLD_SIZE", 1))
            local_rank = int(os.environ.get("LOCAL_RANK", 0))
        except ValueError:
            raise NmtError("RANK, WORLD_SIZE and LOCAL_RANK must be integers; start ranks with "
                           "torchrun --nproc_per_node=N -m nmt.train ...") from None
        if world_size <= 1:
            return cls(device=device)
        if "MASTER_ADDR" not in os.environ or "MASTER_PORT" not in os.environ:
            raise NmtError(f"WORLD_SIZE={world_size} but MASTER_ADDR/MASTER_PORT are not set; start "
                           "ranks with torchrun --nproc_per_node=N -m nmt.train ...")
        if device.type == "cuda":
            if local_rank >= torch.cuda.device_count():
                raise NmtError(f"LOCAL_RANK={local_rank} but this machine shows "
                               f"{torch.cuda.device_count()} GPU(s); lower --nproc_per_node")
            device = torch.device("cuda", local_rank)      # one GPU per rank
            torch.cuda.set_device(device)
        backend = "nccl" if device.type == "cuda" else "gloo"
        main_work_timeout = max(MAIN_WORK_TIMEOUT, timedelta(seconds=peer_timeout_s))
        try:                             # every rank must come: a missing one fails after the timeout
            if not dist.is_initialized():
                dist.init_process_group(backend, timeout=timedelta(seconds=peer_timeout_s))
            main_work_group = dist.new_group(list(range(world_size)), timeout=main_work_timeout, backend=backend)
        except (RuntimeError, ValueError) as error:     # DistStoreError, DistNetworkError, a refused address
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise NmtError(f"rank {rank} of WORLD_SIZE={world_size} could not form the process group at "
                           f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} within "
                           f"trainer.peer_timeout_s={peer_timeout_s:g} ({first}); start every rank with "
                           "torchrun --nproc_per_node=N -m nmt.train ...") from None
        if rank != 0:
            _quiet()
        return cls(rank, world_size, local_rank, device, main_work_group)

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def close(self) -> None:
        """Leave the process group once the backend holds none of this rank's tensors.
        After a lost peer, nothing is waited for: a backend thread stuck on a stopped
        rank never returns its tensors, and destroying the group would wait on it; the
        process ends at once instead (`exit_after_lost_peer`)."""
        if self.enabled and dist.is_initialized() and not _lost:
            self.lent.wait_returned()
            dist.destroy_process_group()

    # -- the model ----------------------------------------------------------------
    def wrap(self, model: nn.Module) -> nn.Module:
        """DistributedDataParallel around the model (the model itself for one process)."""
        if not self.enabled:
            return model
        ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def no_sync(self, wrapped: nn.Module, last: bool):
        """Skip the gradient all-reduce on every micro-batch of an update but the last."""
        return wrapped.no_sync() if self.enabled and not last else nullcontext()

    # -- collectives ----------------------------------------------------------------
    def _reduce(self, values, op) -> list[float]:
        if not self.enabled:
            return [float(v) for v in values]
        tensor = self.lent.keep(torch.tensor([float(v) for v in values], dtype=torch.float64,
                                             device=self.device))
        with _peers_alive():
            dist.all_reduce(tensor, op=op)
        return tensor.tolist()

    def sum(self, *values) -> list[float]:
        """Each value summed over the ranks."""
        return self._reduce(values, dist.ReduceOp.SUM)

    def max(self, *values) -> list[float]:
        """Each value's maximum over the ranks."""
        return self._reduce(values, dist.ReduceOp.MAX)

    def all(self, flag: bool) -> bool:
        """True when `flag` holds on every rank."""
        return self._reduce([not flag], dist.ReduceOp.MAX)[0] == 0

    def broadcast(self, *values, after_main_work: bool = False) -> list[float]:
        """Rank 0's values on every rank (float64; NaN travels). after_main_work: the
        others wait while rank 0 works alone (validates), up to MAIN_WORK_TIMEOUT."""
        if not self.enabled:
            return [float(v) for v in values]
        tensor = self.lent.keep(torch.tensor([float(v) for v in values], dtype=torch.float64,
                                             device=self.device))
        with _peers_alive():
            dist.broadcast(tensor, src=0, group=self.main_work_group if after_main_work else None)
        return tensor.tolist()

    def broadcast_object(self, obj):
        """Rank 0's picklable object on every rank (e.g. its run folder): its
        pickle's length, then its bytes, in tensors this rank keeps (`_Lent`)."""
        if not self.enabled:
            return obj
        payload = pickle.dumps(obj) if self.is_main else b""
        (size,) = self.broadcast(len(payload), after_main_work=True)
        data = torch.zeros(int(size), dtype=torch.uint8)
        if self.is_main:
            data.copy_(torch.frombuffer(bytearray(payload), dtype=torch.uint8))
        data = self.lent.keep(data.to(self.device))
        with _peers_alive():
            dist.broadcast(data, src=0, group=self.main_work_group)
        return pickle.loads(data.cpu().numpy().tobytes())

    def barrier(self) -> None:
        """Every rank waits for the others, up to MAIN_WORK_TIMEOUT (rank 0 may be writing)."""
        if self.enabled:
            with _peers_alive():
                dist.barrier(group=self.main_work_group)

    def peers_alive(self):
        """Around work whose collectives torch runs itself (DDP's gradient all-reduce
        in backward): a lost rank ends this one with `PeerLost`, not a traceback;
        the work's own errors pass through unchanged."""
        return _peers_alive(collectives_only=True) if self.enabled else nullcontext()

    @contextmanager
    def main_first(self):
        """Rank 0 runs the block first (e.g. trains and caches the vocabulary), then the others.

        If rank 0 fails inside, it exits and torchrun stops the waiting ranks.
        """
        if not self.is_main:
            self.barrier()
        yield
        if self.is_main:
            self.barrier()

    # -- where an epoch is ---------------------------------------------------------
    def to_global(self, local_batches: int) -> int:
        """Batches this rank consumed -> batches of the epoch consumed by all ranks."""
        return local_batches * self.world_size

    def to_local(self, global_batches: int) -> int:
        """A stored position, written by any number of ranks -> this rank's next batch.

        Rounds up, so a batch already seen is never seen twice this epoch; at most
        world_size - 1 batches are skipped when the number of ranks changed.
        """
        return math.ceil(global_batches / self.world_size)

    def rank_seed(self, seed: int, step: int) -> int:
        """A seed for dropout and sampling that differs between ranks (and resumes)."""
        return seed + 100_003 * self.rank + step


class _Lent:
    """The tensors this rank handed to collectives, each kept by Python until
    the backend's threads let go of it (its C++ use count is back to 1)."""

    def __init__(self):
        self.tensors: list[torch.Tensor] = []

    def keep(self, tensor: torch.Tensor) -> torch.Tensor:
        self.tensors = [t for t in self.tensors if t._use_count() > 1] + [tensor]
        return tensor

    def wait_returned(self, seconds: float = 10.0) -> None:
        """Sleep (the GIL free for the backend's threads) until every tensor is
        returned; after `seconds` (a rank that died mid-collective) stop waiting."""
        deadline = time.monotonic() + seconds
        while any(t._use_count() > 1 for t in self.tensors) and time.monotonic() < deadline:
            time.sleep(0.001)
        self.tensors = []


@contextmanager
def _peers_alive(collectives_only: bool = False):
    """A collective that fails because another rank has gone (its own error said
    why) or stayed silent past the group's timeout raises `PeerLost`.
    collectives_only: the block does more than collectives (a backward pass), so
    only a backend's error (DistError, or gloo's / nccl's words) is a lost peer."""
    try:
        yield
    except RuntimeError as error:
        detail = re.sub(r"^\[[^\]]*\]\s*", "", (str(error).splitlines() or [""])[0])   # no source location
        if collectives_only and not isinstance(error, dist.DistError) and \
                not re.search(r"gloo|nccl|timed? ?out|peer|connection", detail, re.IGNORECASE):
            raise                              # the block's own error, not a lost rank
        _lost.append(True)
        raise PeerLost(f"another rank stopped or stayed silent (see its error above, if any); this rank "
                       f"stops too: {detail[:120]}") from None


def _quiet() -> None:
    """Ranks other than 0 write no log file and print warnings only."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, logging.FileHandler):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(logging.WARNING)
    for name in ("nmt", "nmt.train", "nmt.data"):
        logging.getLogger(name).setLevel(logging.WARNING)


def exit_after_lost_peer(code: int) -> None:
    """End this process with `code` at once (its line said, its files written and
    flushed): after a lost peer, the interpreter's exit would run the process group's
    and DDP's destructors, which join backend threads still waiting on the stopped
    rank (seen: 10 to 45 s past trainer.peer_timeout_s). A no-op when no peer was lost."""
    if not _lost:
        return
    logging.shutdown()                   # train.log's last records
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
