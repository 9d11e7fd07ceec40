"""Checkpoint averaging: the element-wise mean of several checkpoints' weights.

    theta_avg = (1/N) sum_i theta_i        for every floating-point tensor

(Vaswani et al. 2017, Sec. 6.1: the last few checkpoints of a run.) The
checkpoints must be of one model: the same sentencepiece models (else the
same id means another subword in each) and the same model config (else the
same tensor means another thing); anything else is one NmtError naming both
files. The result keeps the config and tokenizer of the first checkpoint and
no optimiser state: it is for translation. `run_checkpoints` picks a run's
step_N.pt by recency or by the scores in its metrics.jsonl.
"""

import json
import math
import os
import sys
from pathlib import Path

from omegaconf import OmegaConf

from nmt.base.errors import NmtError
from nmt.base.file_inputs import refuse_not_file, refuse_not_folder
from nmt.store.checkpoints import (
    RESUME_KEYS,
    best_steps,
    check_same_vocabulary,
    load_checkpoint,
    step_checkpoints,
    step_of,
)
from nmt.store.metrics_log import METRIC_SIGN, METRICS_FILE, read_records


def config_difference(a, b, where: str = "model") -> str | None:
    """The first place where two nested configs differ, as 'key: A vs B', or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                side = "second" if key not in a else "first"
                return f"{where}.{key} only in the {side}"
            found = config_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            found = config_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def check_same_model(first: Path, first_state: dict, other: Path, other_state: dict) -> None:
    """Refuse two checkpoints whose vocabularies, model configs or tensors differ."""
    check_same_vocabulary(first, first_state["tokenizer"], other, other_state["tokenizer"], "averaging")
    difference = config_difference(first_state["config"].get("model"), other_state["config"].get("model"))
    if difference:
        raise NmtError(
            f"checkpoints {first} and {other} have different model configs ({difference[:160]}); "
            "average checkpoints of one run"
        )
    ours, theirs = first_state["model"], other_state["model"]
    if ours.keys() != theirs.keys() or any(theirs[k].shape != v.shape for k, v in ours.items()):
        raise NmtError(f"checkpoints {first} and {other} have different model shapes; average checkpoints of one run")


def average_checkpoints(paths: list[Path]) -> dict:
    """The element-wise mean of the checkpoints' weights, as a checkpoint for
    translation; one checkpoint is in memory beside the running sum."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise NmtError("give at least one checkpoint to average")
    first = load_checkpoint(paths[0], parts=("model",))  # the weights: an average has no optimiser
    total = {name: t.double() if t.is_floating_point() else t.clone() for name, t in first["model"].items()}
    for path in paths[1:]:
        state = load_checkpoint(path, parts=("model",))
        check_same_model(paths[0], first, path, state)
        for name, tensor in state["model"].items():
            if tensor.is_floating_point():
                total[name] += tensor.double()
        del state
    averaged = {
        name: t.div(len(paths)).to(first["model"][name].dtype) if t.is_floating_point() else t
        for name, t in total.items()
    }
    result = {
        "config": first["config"],
        "tokenizer": first["tokenizer"],
        "model": averaged,
        "averaged_from": [str(p) for p in paths],
    }
    for key in ("samples", "sample_references"):  # the explorer's example sentences
        if key in first:
            result[key] = first[key]
    return result


def run_metric(run: Path) -> str:
    """The trainer.metric a run chose best.pt by: summary.json, else .hydra/config.yaml."""
    summary = run / "summary.json"
    config = run / ".hydra" / "config.yaml"
    for path in (summary, config):  # a FIFO would never end, a folder or a loop is no record
        refuse_not_file(path, "", "it should be a record nmt.train writes; move it away, or give --metric")
    if summary.is_file():
        try:
            metric = str(json.loads(summary.read_text(encoding="utf-8"))["metric"])
            if metric in METRIC_SIGN:
                return metric
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            pass
    if config.is_file():
        try:
            metric = str(OmegaConf.load(config).trainer.metric)
            if metric in METRIC_SIGN:
                return metric
        except Exception:  # noqa: BLE001 - any unreadable config: say so below
            pass
    raise NmtError(
        f"cannot tell which metric {run} validated by (no readable summary.json or "
        ".hydra/config.yaml); give --metric bleu|chrf|loss"
    )


def run_scores(run: Path, metric: str) -> dict[int, float]:
    """Validated step -> sign * metric, from RUN/metrics.jsonl (NaN for a record without
    it). A line that is not a whole record (a write cut by a kill) is left out, as the
    trainer leaves it out when it resumes."""
    path = run / METRICS_FILE
    refuse_not_file(path, "", "it should be the run's metrics log of nmt.train")
    if not path.is_file():
        raise NmtError(f"{path} does not exist; --run takes the folder of a run of python -m nmt.train")
    scores = {}
    for record in read_records(run):
        try:
            value = float(record[metric]) if record.get(metric) is not None else math.nan
        except (ValueError, TypeError):
            value = math.nan
        scores[record["step"]] = METRIC_SIGN[metric] * value
    return scores


def is_step_checkpoint(path: Path) -> bool:
    """Whether `path` is what the trainer writes as step_N.pt: a checkpoint to
    continue from (optimiser, schedule, progress, RNG) at update N. A weights-only
    file (an average, an export's source) renamed step_N.pt is not."""
    state = load_checkpoint(path, mmap=True)
    progress = state.get("progress")
    return (
        all(key in state for key in RESUME_KEYS)
        and isinstance(progress, dict)
        and progress.get("step") == step_of(path)
    )


def run_checkpoints(run: Path, best: int | None, last: int | None, metric: str | None) -> list[Path]:
    """The step_N.pt files of a run that --best N or --last N picks: the
    trainer's own, by what they hold, not by their names."""
    advice = "--run takes the folder of a run of python -m nmt.train"
    refuse_not_folder(run, "--run", advice)  # a FIFO, a link loop: said, not "no step_N.pt"
    if os.path.lexists(run / "checkpoints"):
        refuse_not_folder(run / "checkpoints", "", advice)
    kept = {}
    for path in step_checkpoints(run / "checkpoints"):
        if is_step_checkpoint(path):
            kept[step_of(path)] = path
        else:
            print(
                f"nmt: warning: {path} is not a step checkpoint written by training (no training progress "
                f"at step {step_of(path)}); left out",
                file=sys.stderr,
            )
    if not kept:
        raise NmtError(f"{run / 'checkpoints'} holds no step_N.pt (trainer.keep_last=0?); nothing to average")
    if last is not None:
        steps = sorted(kept)[-last:]
    else:
        scores = run_scores(run, metric or run_metric(run))
        steps = best_steps({s: v for s, v in scores.items() if s in kept}, best)
        if not steps:
            raise NmtError(f"none of the step_N.pt of {run} has a validation record in {run / 'metrics.jsonl'}")
    if len(steps) < (last or best):
        print(f"nmt: warning: {run} kept {len(steps)} step checkpoints for this; averaging those", file=sys.stderr)
    return [kept[s] for s in steps]
