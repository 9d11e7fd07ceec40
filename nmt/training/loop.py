"""The training loop: epochs of updates (nmt.core.step.train_step), validation,
early stopping and checkpoints. Its parts come from `build.py`; the run
harness (nmt.training.harness: the run folder, resume, time budget, ranks,
signals, progress bar, TensorBoard, end-of-run reports) stands around it.

    trainer = Trainer(parts, settings)     # nmt.training.build.build_trainer makes both
    code = trainer.fit()                   # 0, or 128 + N after stop signal N
"""

import logging
from itertools import islice
from pathlib import Path

from nmt.core.loss import training_loss
from nmt.core.special_tokens import PAD_ID as PAD
from nmt.core.step import train_step
from nmt.base.device import to_device
from nmt.speedups.compile import compile_errors
from nmt.store.checkpoints import best_steps, prune_step_checkpoints, save_checkpoint
from nmt.store.metrics_log import METRIC_SIGN
from nmt.training.harness import RunHarness
from nmt.training.precision import autocast
from nmt.training.progress import Progress
from nmt.training.settings import TrainerParts, TrainSettings
from nmt.training.stops import BudgetSpent, EarlyStop

log = logging.getLogger("nmt.train")


class Trainer:
    """The loop: `fit` runs `train` inside the harness; `train_update` is one update."""

    def __init__(self, parts: TrainerParts, settings: TrainSettings):
        p = parts
        self.model, self.parallel, self.forward, self.graphed = p.model, p.parallel, p.forward, p.graphed
        self.optimizer, self.schedule, self.scaler = p.optimizer, p.schedule, p.scaler
        self.data, self.tokenizer, self.validation = p.data, p.data.tokenizer, p.validation
        self.translator, self.make_translator = p.translator, p.make_translator
        self.loss_weights, self.guided_alignment, self.speedups = p.loss_weights, p.guided_alignment, p.speedups
        self.dist, self.device, self.reporter = p.dist, p.dist.device, p.reporter
        self.checkpoint_info = p.checkpoint_info   # what every checkpoint carries beside the weights
        self.settings, self.precision = settings, settings.precision
        self.run_dir = Path(p.run_dir)
        self.ckpt_dir = self.run_dir / "checkpoints"
        self.token_losses = p.speedups.token_losses()   # the core's label-smoothed loss, or the fused one
        self.progress = Progress()
        self.final_metrics: dict | None = None    # the last validation's record
        self.summary: dict | None = None          # summary.json of a run that finished
        self.test_pairs = p.data.test[:settings.test_max_sentences]   # best.pt's, at the end
        self.harness = RunHarness(self)

    @property
    def step(self) -> int:
        return self.progress.step

    @property
    def valid_pairs(self) -> list:
        return self.validation.pairs

    # -- one update ----------------------------------------------------------
    def train_update(self, batches) -> dict:
        """One optimiser update over `batches` (on every rank), then the schedule's step."""
        if self.graphed:       # one batch, its update replayed from a CUDA graph (it steps the schedule)
            return self.graphed.train_update(batches, self._budget_fraction)
        with compile_errors(self.settings.compile):   # trainer.compile=true: torch.compile's failure is one line
            result = train_step(self.parallel, batches, self._forward, self._loss, self.optimizer,
                                grad_clip=self.settings.grad_clip, scaler=self.scaler, ranks=self.dist)
        if result["finite"]:
            self.schedule.step_update(self._budget_fraction())    # progress.step: the updates before this one
        return result

    def _forward(self, batch):
        """The model on one batch, under the run's precision: (DecoderOutput, penalty)."""
        src, tgt = to_device(batch.src, self.device), to_device(batch.tgt, self.device)
        with autocast(self.device, self.precision):
            if self.loss_weights.guided:   # every layer's cross-attention (Transformer)
                return self.forward(src, tgt[:, :-1], need_weights=True)
            return self.forward(src, tgt[:, :-1])

    def _loss(self, batch, out, penalty, counts):
        """nmt.core.loss.training_loss of one batch; hard attention's baseline follows its reward."""
        attention = self.guided_alignment.attention(self.model.decoder, out) if self.loss_weights.guided else None
        terms = training_loss(out, to_device(batch.tgt[:, 1:], self.device), PAD, self.loss_weights, counts,
                              penalty=penalty, attention=attention, guide=batch.alignment,
                              baseline=self.progress.baseline, token_losses=self.token_losses)
        if terms.reward is not None:
            decay = self.settings.hard_baseline_decay
            self.progress.baseline = decay * self.progress.baseline + (1 - decay) * terms.reward
        return terms

    def _budget_fraction(self) -> float:
        """The budget's share used by the update that just ended, of steps or of minutes (the
        largest the ranks agreed in this process, so it never falls), for schedule=budget_decay."""
        return min(1.0, max((self.progress.step + 1) / self.settings.max_steps,
                            self.harness.budget.highest_spent))

    # -- the loop --------------------------------------------------------------
    def fit(self) -> int:
        """Train until trainer.max_steps, max_epochs or max_minutes, early stopping
        or a stop signal; returns the exit code (128 + N after signal N)."""
        return self.harness.run(self.train)

    def train(self) -> None:
        """The epochs, then a final validation (unless early stopping ended the run) and summary.json."""
        p, s = self.progress, self.settings
        self.model.train()
        try:
            self.harness.check_budget_left()
            while p.step < s.max_steps and p.epoch < s.max_epochs:
                self._epoch()
            stopped_by = "trainer.max_steps" if p.step >= s.max_steps else "trainer.max_epochs"
        except EarlyStop:
            self.summary = self.harness.finish("trainer.patience")
            return
        except BudgetSpent:
            stopped_by = "trainer.max_minutes"
            self.validation, self.test_pairs = self.harness.fit_in_budget(self.validation, self.test_pairs)
        self._validate_and_save(final=True)
        self.summary = self.harness.finish(stopped_by)

    def _epoch(self) -> None:
        """This rank's share of the epoch, from where the run stands, `accumulate` batches an update."""
        p, s = self.progress, self.settings
        stream = self.harness.batches(self.data.train, p.epoch, p.batch_index)
        fresh_epoch, updates = p.batch_index == 0, 0
        while p.step < s.max_steps:
            group = list(islice(stream, s.accumulate))
            if self.harness.epoch_over(group, fresh_epoch, updates):
                p.epoch, p.batch_index = p.epoch + 1, 0
                return
            updates += 1
            self._update(group)

    def _update(self, group) -> None:
        """One update, then what follows it: the log and stop checks, validation or a step checkpoint."""
        p, s = self.progress, self.settings
        result = self.train_update(group)
        now, elapsed = self.harness.update_seconds()
        p.batch_index += len(group)
        p.train_seconds += elapsed
        if not result["finite"]:
            p.skip_update(s.max_bad_steps, self.ckpt_dir / "last.pt")
            return
        p.bad_steps, p.step, p.tokens_total = 0, p.step + 1, p.tokens_total + result["tgt_tokens"]
        self.harness.after_update(result, elapsed)     # raises Stop (a signal) or BudgetSpent
        if p.step % s.val_every == 0:
            self._validate_and_save()
            self.harness.validation_took(since=now)
        elif s.save_every and p.step % s.save_every == 0 and self.dist.is_main:
            self._save_checkpoints()     # between validations, unscored
        self.harness.start_clock()     # the next update's time runs from here

    # -- validation and early stopping -------------------------------------------
    def _validate_and_save(self, final: bool = False) -> None:
        p, metric = self.progress, self.settings.metric
        if final and p.last_validated == p.step:
            return
        p.last_validated = p.step
        result, value = None, float("nan")
        if self.dist.is_main:
            with self.harness.doing("validating"):
                result = self.validation.score(self.model, self.translator, self.device)
            value = {"bleu": result.bleu, "chrf": result.chrf, "loss": result.loss}[metric]
        (value,) = self.dist.broadcast(value, after_main_work=True)  # the others wait for rank 0's score
        score = METRIC_SIGN[metric] * value
        improved = score > p.best
        p.best, p.bad_validations = (score, 0) if improved else (p.best, p.bad_validations + 1)
        self.schedule.step_validation(score)  # on every rank: their learning rates stay equal
        if self.dist.is_main:
            self._record_validation(result, score, improved, final)
        if not final and self.settings.patience and p.bad_validations >= self.settings.patience:
            log.info("early stopping: %s has not improved for %d validations", metric, p.bad_validations)
            raise EarlyStop

    def _record_validation(self, result, score: float, improved: bool, final: bool) -> None:
        """The validation's record and reports, then last.pt (and best.pt when it improved) (rank 0)."""
        p = self.progress
        record = {"step": p.step, "epoch": p.epoch, "loss": result.loss, "perplexity": result.perplexity,
                  "bleu": result.bleu, "chrf": result.chrf, "valid_sentences": len(self.validation.pairs),
                  "lr": self.optimizer.param_groups[0]["lr"], "tokens_per_s": p.window_speed(),
                  "train_seconds": p.train_seconds,
                  "bleu_signature": result.bleu_signature, "chrf_signature": result.chrf_signature}
        self.harness.report_validation(record, result, improved)
        p.step_scores[p.step] = score          # before last.pt: a resumed run knows it
        self._save_checkpoints("last.pt", *(["best.pt"] if improved else []))
        self.final_metrics = record
        if final:
            self.reporter.final_hparams(result)

    # -- checkpoints ------------------------------------------------------------
    def checkpoint_state(self) -> dict:
        return {**self.checkpoint_info, "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(), "schedule": self.schedule.state_dict(),
                "scaler": self.scaler.state_dict(), **self.harness.progress_state()}

    def save(self, name: str, *also: str) -> Path:
        """checkpoints/`name`, and each of `also` as another name of the same file."""
        return save_checkpoint(self.checkpoint_state(), self.ckpt_dir / name, also=[self.ckpt_dir / a for a in also])

    def _save_checkpoints(self, *names: str) -> None:
        """checkpoints/step_N.pt and `names` (one file, the others linked), then the oldest step_N.pt
        pruned: trainer.keep_last newest (at least trainer.average_last) and the trainer.average_best best are kept."""
        s = self.settings
        newest = max(s.keep_last, s.average_last)
        steps = newest > 0 or s.average_best > 0
        if names := names + ((f"step_{self.progress.step}.pt",) if steps else ()):
            self.save(*names)
        if steps:
            prune_step_checkpoints(self.ckpt_dir, newest,
                                   also_keep=best_steps(self.progress.step_scores, s.average_best))
