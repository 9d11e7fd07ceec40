"""What a run writes beside its checkpoints (rank 0 only): metrics.jsonl,
TensorBoard scalars and heatmaps, summary.json, and at the end the averaged
checkpoints of trainer.average_last / trainer.average_best with their scores.

On the other ranks a Reporter is built with `enabled=False` and writes nothing.
The heatmaps are drawn by a thread of their own (`HeatmapDrawer`); every
write to TensorBoard holds one lock.
"""

import copy
import json
import logging
import math
import threading
from pathlib import Path

from torch.utils.tensorboard import SummaryWriter

from nmt.base.atomic import atomic_write
from nmt.base.errors import NmtError
from nmt.store.averaging import average_checkpoints
from nmt.store.checkpoints import best_steps, save_checkpoint, step_checkpoints, step_of
from nmt.store.metrics_log import METRIC_SIGN, METRICS_FILE
from nmt.training.heatmap_drawer import HeatmapDrawer
from nmt.training.run_dir import drop_metrics_after
from nmt.training.tensorboard import attention_cards
from nmt.training.test_set import score_test_set

log = logging.getLogger("nmt.train")
FINAL_KEYS = {"bleu", "chrf", "perplexity", "loss", "bleu_signature"}  # of a metrics.jsonl record


class Reporter:
    def __init__(self, run_dir: Path, hparams: dict, enabled: bool):
        self.run_dir, self.hparams, self.enabled = Path(run_dir), hparams, enabled
        self.writer: SummaryWriter | None = None
        self.metrics_file = None
        self.lock = threading.Lock()  # TensorBoard: this thread's scalars, the drawer's images
        self.drawer: HeatmapDrawer | None = None

    def open(self, step: int) -> dict | None:
        """Open TensorBoard and metrics.jsonl where the run stands: records
        after `step` (a run killed after them) are dropped. Returns the record
        of `step` when it holds the final keys: the run validated there."""
        if not self.enabled:
            return None
        self.writer = SummaryWriter(str(self.run_dir / "tensorboard"), purge_step=step or None)
        self.drawer = HeatmapDrawer(self.writer, self.lock)
        validated = drop_metrics_after(self.run_dir / METRICS_FILE, step)  # each step once
        self.metrics_file = open(self.run_dir / METRICS_FILE, "a", encoding="utf-8")
        return validated if validated and FINAL_KEYS <= validated.keys() else None

    def scalars(self, step: int, values: dict) -> None:
        if self.enabled:
            with self.lock:
                for tag, value in values.items():
                    self.writer.add_scalar(tag, value, step)

    def validation(self, record: dict, translator, heatmap_pairs) -> None:
        """One metrics.jsonl line, the valid/* scalars and the heatmaps of a
        validation: their maps are read here, then drawn by the drawing thread."""
        if not self.enabled:
            return
        self.metrics_file.write(json.dumps(record) + "\n")
        self.metrics_file.flush()
        self.scalars(record["step"], {f"valid/{tag}": record[tag] for tag in ("loss", "perplexity", "bleu", "chrf")})
        self.drawer.submit(attention_cards(translator, heatmap_pairs), record["step"])

    def drawing(self) -> bool:
        """Whether the drawing thread is at work."""
        return self.enabled and self.drawer.busy()

    def heatmap_seconds(self) -> float:
        """The heatmaps' drawing time still to come: those in progress and one more validation's."""
        return self.drawer.seconds_needed() if self.enabled else 0.0

    def heatmap_wait(self) -> float:
        """How long the last validation waited for the heatmaps before it to be written."""
        return self.drawer.waited if self.enabled else 0.0

    def drop_heatmaps(self, deadline: float) -> None:
        """Give up the heatmaps not drawn yet (the final validation's replace them);
        from now on no card starts that would end after `deadline` (a perf_counter time)."""
        if self.enabled:
            self.drawer.drop()
            self.drawer.deadline = deadline

    def final_hparams(self, result) -> None:
        if self.enabled:
            with self.lock:
                self._add_hparams(result)

    def _add_hparams(self, result) -> None:
        self.writer.add_hparams(
            self.hparams,
            # under valid/: the run's final point sits in the validation cards, and no
            # group of its own pushes valid/bleu below the fold
            {"valid/bleu": result.bleu, "valid/chrf": result.chrf, "valid/perplexity": result.perplexity},
            run_name="hparams",
        )

    def summary(self, summary: dict) -> None:
        """summary.json: what nmt.compare puts in its table; written whole (a full disk
        leaves no half of it, which nmt.compare would count as damaged)."""
        if self.enabled:
            try:
                atomic_write(self.run_dir / "summary.json", (json.dumps(summary, indent=1) + "\n").encode("utf-8"))
            except OSError as error:
                raise NmtError(
                    f"cannot write {self.run_dir / 'summary.json'}: {error.strerror or error}; free "
                    "disk space, then continue with trainer.resume=auto"
                ) from None

    def close(self, drop: bool = False) -> None:
        """Wait for the heatmaps being drawn (drop: only the card in progress), then close the files."""
        if self.enabled:
            self.drawer.close(drop)
            self.writer.close()
            self.metrics_file.close()


def average_and_validate(
    ckpt_dir: Path,
    model,
    make_translator,
    validation,
    device,
    reporter: Reporter,
    step: int,
    name: str,
    key: str,
    n: int,
    steps: list[Path],
) -> dict:
    """Average the step checkpoints `steps` into checkpoints/NAME.pt (refused,
    with a warning, when they are of another vocabulary or model config) and
    validate it as best.pt is; its scores as NAME_*, also in TensorBoard
    under NAME/. `key` and `n` name the setting (trainer.KEY=N) in the log."""
    if not steps:
        return {}
    if len(steps) < n:
        log.warning("trainer.%s=%d: the run kept %d step checkpoints for it; averaging those", key, n, len(steps))
    try:
        state = average_checkpoints(steps)
    except NmtError as error:  # e.g. a resume_force'd run changed its vocabulary
        log.warning("no %s.pt: %s", name, error)
        return {}
    averaged = copy.deepcopy(model)
    averaged.load_state_dict(state["model"])
    result = validation.score(averaged, make_translator(averaged), device)
    path = save_checkpoint(state, ckpt_dir / f"{name}.pt")
    reporter.scalars(step, {f"{name}/{tag}": getattr(result, tag) for tag in ("loss", "perplexity", "bleu", "chrf")})
    log.info(
        "averaged %d checkpoints (steps %s) into %s | loss %.3f ppl %.2f | BLEU %.2f chrF %.2f",
        len(steps),
        ", ".join(str(step_of(p)) for p in steps),
        path,
        result.loss,
        result.perplexity,
        result.bleu,
        result.chrf,
    )
    return {
        f"{name}_bleu": result.bleu,
        f"{name}_chrf": result.chrf,
        f"{name}_loss": result.loss,
        f"{name}_perplexity": result.perplexity,
        f"{name}_steps": [step_of(p) for p in steps],
    }


def averages(ckpt_dir: Path, average_last: int, average_best: int, step_scores: dict, **validate) -> dict:
    """trainer.average_last=N and trainer.average_best=N: the last N step
    checkpoints averaged into checkpoints/averaged.pt, the N best-validated
    ones into checkpoints/averaged_best.pt; their scores for summary.json.
    `validate`: the keyword arguments of average_and_validate after `ckpt_dir`."""
    steps = step_checkpoints(ckpt_dir)
    scores = {}
    if average_last > 0 and steps:
        scores.update(
            average_and_validate(
                ckpt_dir, name="averaged", key="average_last", n=average_last, steps=steps[-average_last:], **validate
            )
        )
    best = set(best_steps(step_scores, average_best))
    if average_best > 0 and best:
        scores.update(
            average_and_validate(
                ckpt_dir,
                name="averaged_best",
                key="average_best",
                n=average_best,
                steps=[p for p in steps if step_of(p) in best],
                **validate,
            )
        )
    return scores


def end_of_run_scores(ckpt_dir: Path, settings, step_scores: dict, test_pairs, bar, **validate) -> dict:
    """What follows the final validation, each phase named on the bar: the averaged
    checkpoints' scores (trainer.average_*) and best.pt's on the test set.
    `validate`: model, make_translator, validation, device, reporter, step."""
    s, scores = settings, {}
    if s.average_last or s.average_best:
        with bar.doing("averaging checkpoints"):
            scores.update(averages(ckpt_dir, s.average_last, s.average_best, step_scores, **validate))
    with bar.doing("scoring the test set"):
        scores.update(
            score_test_set(
                ckpt_dir / "best.pt",
                validate["model"],
                validate["make_translator"],
                test_pairs,
                s.val_beam_size,
                s.coverage_penalty,
            )
        )
    return scores


def train_scalars(loss: float, lr: float, grad_norm: float, speed: float, aux: dict) -> dict:
    """The train/* scalars of one logged update."""
    scalars = {
        "train/loss": loss,
        "train/perplexity": math.exp(min(loss, 50)),
        "train/lr": lr,
        "train/grad_norm": grad_norm,
        "train/tokens_per_s": speed,
    }
    scalars.update({f"train/{name}": value for name, value in aux.items()})  # coverage / guided alignment
    return scalars


def run_summary(final: dict, progress, metric: str, parameters: int, wall_s: float, stopped_by: str) -> dict:
    """summary.json's keys of the run itself: the `final` validation's record,
    the best score by `metric`, speed and time, and the setting that ended the run."""
    return {
        "parameters": parameters,
        "bleu": final["bleu"],
        "chrf": final["chrf"],
        "perplexity": final["perplexity"],
        "loss": final["loss"],
        "step": progress.step,
        "tokens_per_s": progress.speed(),
        "wall_s": wall_s,
        "train_seconds": progress.train_seconds,
        "best": METRIC_SIGN[metric] * progress.best,
        "metric": metric,
        "skipped_updates": progress.skipped,
        "bleu_signature": final["bleu_signature"],
        "stopped_by": stopped_by,
    }
