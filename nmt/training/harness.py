"""The run harness around the training loop (nmt.training.loop): what keeps a
run safe and visible but does not change what it learns.

    harness = RunHarness(trainer)
    code = harness.run(trainer.train)      # the folder locked, resumed, signals caught; the exit code

The loop calls its hooks: `run` (the run folder's lock, resume or a fresh
start, signals, the ranks' last barrier), `batches` and `epoch_over` (this
rank's share of an epoch), `after_update` (the log line, the progress bar,
TensorBoard's scalars, the time budget with the end-of-run's reserve, a stop
signal), `doing` (what the bar says), `report_validation` (metrics.jsonl,
TensorBoard, heatmaps, the log) and `finish` (averages, the test set,
summary.json).
"""

import logging
import signal
import time
from contextlib import nullcontext
from itertools import islice

import torch

from nmt.base import signals
from nmt.base.errors import NmtError
from nmt.models.build import count_parameters
from nmt.base.run_files import holds_a_run
from nmt.store.checkpoints import check_fingerprint, load_checkpoint
from nmt.training.budget import TimeBudget
from nmt.training.display import Display
from nmt.training.distributed import PeerLost
from nmt.training.final_cost import FinalCost, probe_search
from nmt.training.progress import rng_state, set_rng_state
from nmt.training.reporting import end_of_run_scores, run_summary, train_scalars
from nmt.training.resume_checks import load_start_weights, require_resume_state
from nmt.training.run_command import continue_command
from nmt.training.run_dir import RunDirLock, find_resume_checkpoint, holds_a_run_error
from nmt.training.stops import BudgetSpent, Stop

log = logging.getLogger("nmt.train")


class RunHarness:
    def __init__(self, trainer):
        """`trainer`: the loop (nmt.training.loop.Trainer) whose run this is."""
        s = trainer.settings
        self.trainer, self.settings, self.dist, self.reporter = trainer, s, trainer.dist, trainer.reporter
        self.run_dir, self.ckpt_dir = trainer.run_dir, trainer.ckpt_dir
        self.budget = TimeBudget(s.max_minutes)
        averaged = (s.average_last > 0) + (s.average_best > 0)   # validated at the end too
        self.final_cost = FinalCost(len(trainer.validation.pairs), len(trainer.test_pairs), averaged,
                                    60 * (s.max_minutes or 0))
        self.stop_signal: int | None = None
        self.window = {"tokens": 0, "time": 0.0, "loss": 0.0, "updates": 0}   # since the last log line
        self.mark = 0.0        # perf_counter when the last update's validation and checkpoints ended
        self.bar = None

    # -- the run ------------------------------------------------------------------
    def run(self, train) -> int:
        """`train()` in the locked run folder (rank 0), after a resume or a fresh start,
        stop signals caught; returns the exit code (128 + N after signal N)."""
        with RunDirLock(self.run_dir) if self.dist.is_main else nullcontext():
            try:
                code = self._run(train)
                self.dist.barrier()            # the other ranks wait while rank 0 writes
                return code
            finally:
                self.dist.close()

    def _run(self, train) -> int:
        t = self.trainer
        self.start()
        previous = {s: signal.signal(s, self._note_signal) for s in signals.STOP_SIGNALS}
        self.bar = Display(self.settings.max_steps, t.progress.step, self.dist.is_main)
        self.budget.start()
        self.start_clock()
        try:
            train()
        except Stop:                           # a stop signal: the update in progress was finished
            if self.stop_signal is not None and self.dist.is_main:
                t.save("last.pt")
        except PeerLost as lost:               # the last finished update is kept; the one in progress is not
            if self.dist.is_main:
                t.save("last.pt")
            raise PeerLost(f"{lost} (at step {t.progress.step}; checkpoint {self.ckpt_dir / 'last.pt'}, "
                           f"continue with: {continue_command(self.run_dir)})") from None
        finally:
            self.bar.close()
            signals.note_leaving_error(NmtError)   # a stop signal before its line writes that line
            signals.set_context(f"after training; checkpoints in {self.ckpt_dir}")
            for s, handler in previous.items():
                signal.signal(s, handler)
            self.reporter.close(drop=self.stop_signal is not None)   # a stop signal: no waiting for heatmaps
        if self.stop_signal is None:
            return 0
        if self.dist.is_main:                  # also a signal during the final validation
            signals.report(self.stop_signal, f"at step {t.progress.step}; checkpoint "
                           f"{self.ckpt_dir / 'last.pt'}; continue with: {continue_command(self.run_dir)}")
        return signals.exit_code(self.stop_signal)

    def _note_signal(self, signum, frame) -> None:   # the loop stops after the update in progress
        self.stop_signal = signum

    def start(self) -> None:
        """Resume, start from weights only, or start fresh (refusing a folder that
        holds any trace of a run); seed the ranks, open the reports."""
        t, s = self.trainer, self.settings
        resume = find_resume_checkpoint(s.resume, self.run_dir, s.resume_weights_only)
        if (resume is None or s.resume_weights_only) and holds_a_run(self.run_dir):   # never over a run's files
            raise holds_a_run_error(self.run_dir)
        if s.resume_weights_only:              # a fresh optimiser and schedule from step 0
            load_start_weights(t.model, resume, t.checkpoint_info["fingerprint"], s.resume_force)
            log.info("started from the weights of %s", resume)
        elif resume is not None:
            self.resume(resume)
        if self.dist.enabled:                  # dropout and sampling differ between ranks
            torch.manual_seed(self.dist.rank_seed(s.seed, t.progress.step))
        validated = self.reporter.open(t.progress.step)
        validated = self.dist.broadcast_object(validated if self.dist.is_main else None)
        if t.progress.step and validated:      # not validated twice at one step
            t.progress.last_validated, t.final_metrics = t.progress.step, validated
        log.info("model: %s parameters on %s, %s%s", f"{count_parameters(t.model):,}", t.device,
                 t.precision, " (trainer.precision=auto)" if s.precision_auto else "")

    def resume(self, path) -> None:
        t, state = self.trainer, load_checkpoint(path)
        require_resume_state(state, path)      # weights only (averaged): one line, not a KeyError
        check_fingerprint(state, t.checkpoint_info["fingerprint"], path, force=self.settings.resume_force)
        try:
            t.model.load_state_dict(state["model"])
            t.optimizer.load_state_dict(state["optimizer"])
        except (RuntimeError, ValueError, KeyError) as error:
            raise NmtError(f"cannot resume from {path}: it was trained with another model or "
                           f"optimiser config ({str(error).splitlines()[0][:120]})") from None
        t.schedule.load_state_dict(state["schedule"])
        if state.get("scaler"):
            t.scaler.load_state_dict(state["scaler"])
        t.progress.load_state_dict(state["progress"])
        t.progress.batch_index = self.dist.to_local(t.progress.batch_index)
        self.budget.load_state_dict(state["progress"])
        set_rng_state(state["rng"])
        log.info("resumed from %s at step %d (epoch %d, batch %d)", path, t.progress.step,
                 t.progress.epoch, t.progress.batch_index)

    def progress_state(self) -> dict:
        """What a checkpoint keeps of where the run stands (resume restores it), and the rng."""
        progress = self.trainer.progress.state_dict()
        # batch_index counts the epoch's batches of all ranks, so any number of ranks can resume
        progress["batch_index"] = self.dist.to_global(self.trainer.progress.batch_index)
        progress.update(self.budget.state_dict())
        return {"progress": progress, "rng": rng_state()}

    # -- the epochs --------------------------------------------------------------------
    def check_budget_left(self) -> None:
        """BudgetSpent for a resumed run whose time budget was already used up."""
        self.budget.spent = self.budget.fraction(self.budget.seconds_before)   # equal on every rank
        if self.budget.spent >= 1.0:
            log.info("time budget of %g minutes already spent at step %d", self.settings.max_minutes,
                     self.trainer.progress.step)
            raise BudgetSpent

    def batches(self, data, epoch: int, batch_index: int):
        """This rank's share of the epoch's batches (all of them for one process), from `batch_index`."""
        return islice(data.batches(epoch, self.dist.rank, self.dist.world_size), batch_index, None)

    def epoch_over(self, group: list, fresh_epoch: bool, updates: int) -> bool:
        """Whether the shortest share is spent: then all ranks end the epoch."""
        if self.dist.all(bool(group)):
            return False
        if fresh_epoch and not updates:
            raise NmtError(f"epoch {self.trainer.progress.epoch} gave no batch to some of the "
                           f"{self.dist.world_size} rank(s); keep more training pairs (data.max_len), lower "
                           "data.batch_tokens or start fewer ranks")
        return True

    def update_seconds(self) -> tuple[float, float]:
        """(now, the wall time since the last update's validation and checkpoints: loading the batches
        and the update)."""
        now = time.perf_counter()
        elapsed, self.mark = now - self.mark, now
        return now, elapsed

    def after_update(self, result: dict, elapsed: float) -> None:
        """The update's log line, bar and scalars; the budget's share used; Stop after a stop
        signal to any rank, BudgetSpent once trainer.max_minutes is used up."""
        t, s, w, p = self.trainer, self.settings, self.window, self.trainer.progress
        w["tokens"], w["time"] = w["tokens"] + result["tgt_tokens"], w["time"] + elapsed
        w["loss"], w["updates"] = w["loss"] + result["nll"], w["updates"] + 1
        # the end of the run (final validation, averages, test set) must fit in the budget too
        if s.max_minutes and self.dist.is_main and self.final_cost.probe_due(self.budget.spent):
            probe_search(self.final_cost, t.model, t.translator, t.validation, self.budget.spent)
        self.budget.reserve = self.final_cost.reserve() + self.reporter.heatmap_seconds()
        # a signal to any rank stops all; the time budget's share used, one value on every rank
        signum, self.budget.spent = self.dist.max(self.stop_signal or 0, self.budget.fraction())
        lr, loss = t.optimizer.param_groups[0]["lr"], w["loss"] / w["updates"]
        speed = w["tokens"] / w["time"] if w["time"] else 0.0     # a clock too coarse to see the update
        self.bar.update(p.step, self.budget.spent, loss, lr, speed, drawing=self.reporter.drawing())
        if p.step % s.log_every == 0 or p.step == 1:
            if self.dist.is_main:
                log.info("step %d epoch %d | loss %.3f | lr %.2e | %.0f tok/s", p.step, p.epoch, loss, lr, speed)
                self.reporter.scalars(p.step, train_scalars(loss, lr, result["grad_norm"], speed, result["aux"]))
            self.window = {"tokens": 0, "time": 0.0, "loss": 0.0, "updates": 0}
        if signum:
            self.stop_signal = self.stop_signal or int(signum)
            raise Stop
        if self.budget.spent >= 1.0:           # trainer.max_minutes used up, over the whole run
            log.info("time budget of %g minutes reached at step %d", s.max_minutes, p.step)
            raise BudgetSpent

    def start_clock(self) -> None:
        """The next update's wall time counts from now (after validation and checkpoints)."""
        self.mark = time.perf_counter()

    def validation_took(self, since: float) -> None:
        """A validation (and its checkpoints) ended: its seconds, for the end-of-run's reserve."""
        self.final_cost.validation_seconds = time.perf_counter() - since - self.reporter.heatmap_wait()

    def fit_in_budget(self, validation, test_pairs: list) -> tuple:
        """The budget is spent: the final validation's heatmaps and sentences cut to what still fits."""
        self.reporter.drop_heatmaps(self.budget.deadline())   # the final validation's come instead
        return self.final_cost.fit_in_budget(validation, test_pairs)

    # -- reports -------------------------------------------------------------------------
    def doing(self, what: str):
        """The bar says `what` while the block runs."""
        return self.bar.doing(what)

    def report_validation(self, record: dict, result, improved: bool) -> None:
        """metrics.jsonl, TensorBoard and its heatmaps, the log (rank 0)."""
        t, p = self.trainer, self.trainer.progress
        with self.bar.doing("drawing attention"):     # reading the maps; a thread draws them
            self.reporter.validation(record, t.translator, t.validation.heatmap_pairs)
        log.info("validation step %d epoch %d | loss %.3f ppl %.2f | BLEU %.2f chrF %.2f | lr %.2e | "
                 "%.0f tok/s%s", p.step, p.epoch, result.loss, result.perplexity, result.bleu, result.chrf,
                 record["lr"], record["tokens_per_s"], " | new best" if improved else "")
        if not p.step_scores:                  # the signatures once a run, at its first validation
            log.info("sacreBLEU %s | chrF %s", result.bleu_signature, result.chrf_signature)

    def finish(self, stopped_by: str) -> dict | None:
        """summary.json (rank 0), its wall_s after the run's end; `stopped_by`: what ended the run."""
        if not self.dist.is_main:
            return None
        t, p, s = self.trainer, self.trainer.progress, self.settings
        summary = end_of_run_scores(self.ckpt_dir, s, p.step_scores, t.test_pairs, self.bar,
                                    model=t.model, make_translator=t.make_translator,
                                    validation=t.validation, device=t.device, reporter=self.reporter,
                                    step=p.step)
        summary = {**run_summary(t.final_metrics, p, s.metric, count_parameters(t.model),
                                 self.budget.wall_seconds(), stopped_by), **summary}
        self.reporter.summary(summary)
        return summary
