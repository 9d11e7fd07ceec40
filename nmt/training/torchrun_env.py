"""torchrun's environment, checked before anything is written.

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT in
every process it starts. A process without them is the one process of a
run; with them, they must describe one rank of a group: whole numbers,
0 <= RANK < WORLD_SIZE, 0 <= LOCAL_RANK < WORLD_SIZE, and for a group of two
or more an address and a port to meet at. Anything else (RANK=abc, RANK=1
without WORLD_SIZE, left over in a shell) is one NmtError line before the
run folder is made, locked or logged to, so a refusal changes no file.
Standard library only: `nmt.train` asks this before Hydra starts.
"""

import os

from nmt.base.errors import NmtError

HOW = "start the ranks with torchrun --nproc_per_node=N -m nmt.train ..., or unset it for one process"


def _whole(environ, name: str, default: int) -> int:
    text = environ.get(name)
    if text is None:
        return default
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise NmtError(f"{name}={text!r} in the environment is not a whole number from 0 to 999999999; {HOW}")
    return int(text)


def torchrun_ranks(environ=None) -> tuple[int, int, int]:
    """(rank, world size, local rank) from the environment, checked; (0, 1, 0) without torchrun."""
    environ = os.environ if environ is None else environ
    rank, world, local = (_whole(environ, "RANK", 0), _whole(environ, "WORLD_SIZE", 1),
                          _whole(environ, "LOCAL_RANK", 0))
    if world < 1:
        raise NmtError(f"WORLD_SIZE={world} in the environment: a group has 1 process or more; {HOW}")
    if rank >= world:
        given = "WORLD_SIZE is not set" if "WORLD_SIZE" not in environ else f"WORLD_SIZE={world}"
        raise NmtError(f"RANK={rank} in the environment but {given}: RANK is one of 0 to WORLD_SIZE - 1 "
                       f"(a rank other than 0 exists only among torchrun's processes); {HOW}")
    if local >= world:
        raise NmtError(f"LOCAL_RANK={local} in the environment but WORLD_SIZE={world}; {HOW}")
    if world > 1:
        missing = [name for name in ("RANK", "MASTER_ADDR", "MASTER_PORT") if not environ.get(name)]
        if missing:
            raise NmtError(f"WORLD_SIZE={world} in the environment but {', '.join(missing)} not set; {HOW}")
        port = environ["MASTER_PORT"]
        if not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
            raise NmtError(f"MASTER_PORT={port!r} in the environment is not a port from 1 to 65535; {HOW}")
    return rank, world, local
