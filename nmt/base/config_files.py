"""Where the shipped Hydra configs are: `nmt/configs/`, inside the package, so
a wheel or a non-editable install trains as a checkout does. The repository's
`configs/` is a link to the same folder: one copy of each file."""

from importlib.resources import files
from pathlib import Path

CONFIGS = Path(str(files("nmt") / "configs"))


def group_options(group: str) -> list[str]:
    """The options of a config group (`model/attention` -> ['bahdanau', ...]), sorted."""
    return sorted(p.stem for p in (CONFIGS / group).glob("*.yaml"))
