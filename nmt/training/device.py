"""trainer.device=auto|cpu|cuda to a torch.device, with one clear error."""

import torch

from nmt.errors import NmtError


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise NmtError("device=cuda but no CUDA GPU is visible; use device=cpu or device=auto")
    if name not in ("cpu", "cuda") and not name.startswith("cuda:"):
        raise NmtError(f"device={name!r} unknown; choose auto, cpu or cuda")
    return torch.device(name)
