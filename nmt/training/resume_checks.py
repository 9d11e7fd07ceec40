"""A resumed run's checkpoint against this run's config, before any data is
read: the state a run continues from (not weights only, unless
trainer.resume_weights_only), the same data and vocabulary (unless
trainer.resume_force), and a model config that builds weights of the
checkpoint's names and shapes."""

import json
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from nmt.data.tokenizer import Tokenizer
from nmt.base.errors import NmtError, ResumeRefusal
from nmt.models.build import build_model
from nmt.store.checkpoints import (
    RESUME_KEYS,
    check_fingerprint,
    checkpoint_fingerprint,
    data_fingerprint,
    load_checkpoint,
)


def check_resume_data(path, data_cfg, force: bool = False) -> None:
    """The data settings half of `check_fingerprint`, before any data is read
    (the tokenizer is compared once it is built). The tensors are only mapped."""
    state = load_checkpoint(path, mmap=True)
    saved = checkpoint_fingerprint(state)
    current = {"data": data_fingerprint(data_cfg, {})["data"], "tokenizer": saved["tokenizer"]}
    check_fingerprint(state, current, path, force)


def check_resume_state(path, weights_only: bool = False) -> None:
    """A checkpoint to continue a run from holds the optimiser, schedule,
    progress and random state beside the weights; one without them (an
    averaged checkpoint) is refused in one line, unless `weights_only`
    (trainer.resume_weights_only=true: a new run from its weights)."""
    if not weights_only:
        require_resume_state(load_checkpoint(path, mmap=True), path)


def require_resume_state(state: dict, path) -> None:
    """The refusal of check_resume_state, for a checkpoint already loaded."""
    if any(key not in state for key in RESUME_KEYS):
        what = "an averaged checkpoint" if "averaged_from" in state else "not a training checkpoint"
        raise NmtError(
            f"cannot resume from {path}: it holds model weights only, without the optimiser "
            f"state, schedule and progress a run continues from ({what}); resume from the "
            "run's last.pt or a step_N.pt, or start a new run from these weights with "
            "trainer.resume_weights_only=true and a new hydra.run.dir"
        )


def _model_settings(node, prefix: str = "model") -> dict:
    """Leaves of a model config as {"model.decoder.hidden_size": 128, ...}."""
    if not isinstance(node, dict):
        return {prefix: node}
    found = {}
    for key, value in node.items():
        found.update(_model_settings(value, f"{prefix}.{key}"))
    return found


def _changes_shapes(state: dict, key: str, value, tokenizer, shapes: dict) -> bool:
    """Whether the checkpoint's model config with only `key` set to `value`
    builds weights of other shapes (a setting that matters, not dropout)."""
    config = OmegaConf.create({"model": state["config"].get("model")})
    try:
        OmegaConf.update(config, key, value, merge=False)
        with torch.device("meta"):
            model = build_model(config.model, tokenizer.src_vocab_size, tokenizer.tgt_vocab_size)
    except Exception:  # noqa: BLE001 - this setting alone does not build: it matters
        return True
    return {name: tuple(t.shape) for name, t in model.state_dict().items()} != shapes


def check_resume_model(path, model_cfg) -> None:
    """The checkpoint's weights against the model this config builds, before
    any data is read: built on the meta device with the checkpoint's
    vocabulary sizes, every weight must have its name and shape (as the
    trainer's load_state_dict will need). Other settings that keep the shapes
    (dropout, ...) are the user's to change. Another model is one line naming
    the settings that differ and the first weight."""
    state = load_checkpoint(path, mmap=True)
    tokenizer = Tokenizer.from_bytes(state["tokenizer"])
    with torch.device("meta"):
        model = build_model(model_cfg, tokenizer.src_vocab_size, tokenizer.tgt_vocab_size)
    ours = {name: tuple(t.shape) for name, t in state["model"].items()}
    theirs = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    if ours == theirs:
        return
    name = next(n for n in sorted(set(ours) | set(theirs)) if ours.get(n) != theirs.get(n))
    shape = lambda table: "absent" if name not in table else str(tuple(table[name]))  # noqa: E731
    if isinstance(model_cfg, DictConfig):
        model_cfg = OmegaConf.to_container(model_cfg, resolve=True)
    saved = _model_settings(state["config"].get("model"))
    current = _model_settings(model_cfg)
    differ = [k for k in sorted(set(saved) | set(current)) if saved.get(k, "unset") != current.get(k, "unset")]
    keys = [k for k in differ if _changes_shapes(state, k, current.get(k), tokenizer, ours)] or differ
    keys = keys[:4]
    settings = lambda table: ", ".join(f"{k}={table.get(k, 'unset')}" for k in keys)  # noqa: E731
    detail = (
        f"it was trained with another model (checkpoint: {settings(saved)}; this config: "
        f"{settings(current)}; first weight that differs: {name} {shape(ours)} vs {shape(theirs)})"
    )
    raise ResumeRefusal(
        f"cannot resume from {path}: {detail}; resume with the checkpoint's model settings, or "
        "choose another hydra.run.dir for a new run",
        detail,
        forcible=False,
    )


def load_start_weights(model, path, fingerprint: dict, force: bool = False) -> None:
    """A new run from a checkpoint's weights (an averaged one too), with a
    fresh optimiser and schedule from step 0: the data must be the checkpoint's
    (unless `force`) and the weights must fit `model`."""
    state = load_checkpoint(path)
    check_fingerprint(state, fingerprint, path, force=force)
    try:
        model.load_state_dict(state["model"])
    except (RuntimeError, ValueError) as error:
        raise NmtError(
            f"cannot start from the weights of {path}: it was trained with another model "
            f"({str(error).splitlines()[0][:120]})"
        ) from None


def finished_already(path, run_dir, trainer_cfg) -> tuple[dict, str] | None:
    """When continuing `path`, the run folder's own last.pt, would train no step: the
    run's summary.json says it finished at last.pt's step, and what ended it still
    holds (`limit_reached`). Then (the summary, the line to print), and nmt.train
    changes no file; else None and the run goes on."""
    run_dir = Path(run_dir)
    record = run_dir / "summary.json"
    if Path(path).resolve() != (run_dir / "checkpoints" / "last.pt").resolve() or not record.is_file():
        return None
    try:
        summary = json.loads(record.read_text(encoding="utf-8"))
        state = load_checkpoint(path, mmap=True)
        step = int(state["progress"]["step"])
        key = limit_reached(summary, state, trainer_cfg) if isinstance(summary, dict) else None
    except (OSError, ValueError, KeyError, TypeError, NmtError):
        return None  # unreadable: the resume's own checks say what is wrong
    if key is None or summary.get("step") != step:
        return None
    return summary, (
        f"nmt: the run in {run_dir} already finished at step {step} ({key}); nothing to "
        f"train, no file changed; raise {key.split('=')[0]} to train on\n"
    )


def limit_reached(summary: dict, state: dict, trainer_cfg) -> str | None:
    """The setting ("trainer.max_steps=3") that ended the run of checkpoint `state` and
    would end it again at once: max_steps or max_epochs reached; the time budget
    (trainer.max_minutes) that ended the run spent or not raised (the run stops a final
    validation early, so its clock may stand just short of the budget); patience's count
    of validations without improvement reached, when early stopping ended the run.
    None when a resume would train on."""
    progress = state["progress"]
    step, epoch = int(progress["step"]), int(progress["epoch"])
    trained_with = float((state.get("config") or {}).get("trainer", {}).get("max_minutes") or 0)
    minutes, patience = float(trainer_cfg.max_minutes or 0), int(trainer_cfg.patience or 0)
    stopped_by = summary.get("stopped_by")
    if step >= int(trainer_cfg.max_steps):
        return f"trainer.max_steps={trainer_cfg.max_steps}"
    if epoch >= int(trainer_cfg.max_epochs):
        return f"trainer.max_epochs={trainer_cfg.max_epochs}"
    spent = float(progress["wall_seconds"]) >= 60 * minutes or minutes <= trained_with
    if stopped_by == "trainer.max_minutes" and minutes and spent:
        return f"trainer.max_minutes={trainer_cfg.max_minutes:g}"
    if stopped_by == "trainer.patience" and patience and int(progress["bad_validations"]) >= patience:
        return f"trainer.patience={patience}"
    return None
