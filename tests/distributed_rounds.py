"""`python -m tests.distributed_rounds ROUNDS STORE_FILE`: two gloo ranks, each round
the end of a training run: DDP around a model, a sum and rank 0's object (both
checked), a broadcast, a barrier, `close`, then the DDP wrapper dropped, whose
Reducer releases the process group last
(tests/test_distributed.py::test_ranks_leave_the_group_without_hanging)."""

import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from nmt.training.distributed import Distributed


def rank_rounds(rank: int, rounds: int, store_file: str) -> None:
    torch.set_num_threads(1)
    store = dist.FileStore(store_file, 2)
    for round_index in range(rounds):
        dist.init_process_group("gloo", store=dist.PrefixStore(f"round{round_index}", store),
                                rank=rank, world_size=2)
        ranks = Distributed(rank, 2)
        wrapped = nn.parallel.DistributedDataParallel(nn.Linear(2, 2))
        assert ranks.sum(1.0) == [2.0]
        assert ranks.broadcast_object({"round": round_index} if rank == 0 else None) == {"round": round_index}
        ranks.broadcast(1.0)       # a tensor of this rank's, which gloo's barrier keeps a while
        ranks.barrier()
        ranks.close()
        del wrapped                # the Reducer joins gloo's threads, holding the GIL


if __name__ == "__main__":
    mp.spawn(rank_rounds, args=(int(sys.argv[1]), sys.argv[2]), nprocs=2)
