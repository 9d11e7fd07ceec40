"""The command line of a run, from what its folder keeps: `.hydra/overrides.yaml` holds the
overrides of the command that started (or last continued) it, written when the run took
its folder (run_dir.write_hydra_record).

    continue_command(run_dir)      # nmt-train experiment=first_run trainer.resume=auto hydra.run.dir=RUN
    resume_difference(path, overrides)   # this command against the run's: what was dropped or changed

A stopped run prints the first (the whole command to continue it, not only the two
overrides to add); a resume refused for other data or another model says the second,
which is nearly always an override left out (`experiment=...`), instead of the fields.
"""

import shlex
from pathlib import Path

from omegaconf import OmegaConf

from nmt.base.cli import runnable
from nmt.base.errors import NmtError, ResumeRefusal
from nmt.training.run_dir import HYDRA_SUBDIR

# how the run is continued, not what it trains: never a difference, never copied
RESUME_KEYS = ("trainer.resume", "trainer.resume_force", "trainer.resume_weights_only")


def stored_overrides(run_dir) -> list[str] | None:
    """The overrides the run's folder keeps, less the resume keys; None without a record."""
    path = Path(run_dir) / HYDRA_SUBDIR / "overrides.yaml"
    try:
        overrides = OmegaConf.to_container(OmegaConf.load(path))
    except Exception:  # noqa: BLE001 - missing or damaged (a YAML error): no command to offer
        return None
    if not isinstance(overrides, list):
        return None
    return [str(o) for o in overrides if _key(str(o)) not in RESUME_KEYS]


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def continue_command(run_dir, overrides=None) -> str:
    """The whole command that continues the run in `run_dir`: its stored overrides (or
    `overrides`), trainer.resume=auto and the folder."""
    if overrides is None:
        overrides = stored_overrides(run_dir) or []
    words = [*overrides, "trainer.resume=auto", f"hydra.run.dir={run_dir}"]
    return " ".join([runnable("nmt.train", "nmt-train"), *(shlex.quote(w) for w in words)])


def _differences(stored: list[str], current: list[str]) -> list[str]:
    before = {_key(o): o for o in stored}
    now = {_key(o): o for o in current if _key(o) not in RESUME_KEYS}
    said = []
    for key, override in before.items():
        if key not in now:
            said.append(f"lacks {override}")
        elif now[key] != override:
            said.append(f"has {now[key]} where the run had {override}")
    said += [f"adds {override}" for key, override in now.items() if key not in before]
    return said


def resume_difference(checkpoint, current: list[str], refusal: NmtError) -> NmtError:
    """A resume refused (`refusal`: other data, another model) when this command's
    overrides differ from those the checkpoint's run folder keeps: the difference and
    the run's own command instead; else `refusal` as it was."""
    run_dir = Path(checkpoint).resolve().parent.parent          # RUN/checkpoints/last.pt
    stored = stored_overrides(run_dir)
    if stored is None:
        return refusal
    said = _differences(stored, current)
    if not said:
        return refusal
    detail = f"{refusal.detail}; " if isinstance(refusal, ResumeRefusal) else ""
    force = (", or set trainer.resume_force=true to continue anyway with this command's data"
             if isinstance(refusal, ResumeRefusal) and refusal.forcible else "")
    return NmtError(f"cannot resume from {checkpoint}: {detail}this command {'; '.join(said)} (the run's command, "
                    f"kept in {run_dir / HYDRA_SUBDIR / 'overrides.yaml'}); continue it with: "
                    f"{continue_command(run_dir, stored)}{force}")
