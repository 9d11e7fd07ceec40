"""The update (forward, losses, backward, clipping, step) and the loop around
it (epochs, logging, validation, checkpoints, stopping). Its parts come from
`build.py`; `Progress`, `TimeBudget` and `Reporter` keep the state and outputs."""

import logging
import signal
import time
from contextlib import nullcontext
from itertools import islice
from pathlib import Path

import torch

from nmt import signals
from nmt.errors import NmtError
from nmt.models.build import count_parameters
from nmt.run_files import holds_a_run
from nmt.device import to_device
from nmt.store.checkpoints import (best_steps, check_fingerprint, load_checkpoint, prune_step_checkpoints,
                                   save_checkpoint)
from nmt.store.metrics_log import METRIC_SIGN
from nmt.training.budget import TimeBudget
from nmt.training.display import Display
from nmt.training.distributed import PeerLost
from nmt.training.final_cost import FinalCost, probe_search
from nmt.training.loss import UpdateScratch, reinforce_loss, token_losses
from nmt.training.precision import autocast, compile_errors
from nmt.training.progress import Progress, rng_state, set_rng_state
from nmt.training.reporting import Reporter, end_of_run_scores, run_summary, train_scalars
from nmt.training.resume_checks import load_start_weights, require_resume_state
from nmt.training.run_command import continue_command
from nmt.training.run_dir import RunDirLock, find_resume_checkpoint, holds_a_run_error
from nmt.training.settings import TrainSettings
from nmt.training.stops import BudgetSpent, EarlyStop, Stop

log = logging.getLogger("nmt.train")
PAD = 0


class Trainer:
    def __init__(self, model, parallel, forward, data, optimizer, schedule, scaler, translator,
                 make_translator, validation, losses, dist, settings: TrainSettings, run_dir: Path,
                 checkpoint_info: dict, reporter: Reporter):
        """`parallel`: the model DDP wraps (or the model), `forward`: it compiled or not;
        `losses`: (CoverageLoss, GuidedAlignmentLoss); `checkpoint_info`: what every
        checkpoint carries beside the weights (config, tokenizer, fingerprint, samples)."""
        self.model, self.parallel, self.forward = model, parallel, forward
        self.data, self.tokenizer = data, data.tokenizer
        self.optimizer, self.schedule, self.scaler = optimizer, schedule, scaler
        self.translator, self.make_translator, self.validation = translator, make_translator, validation
        self.coverage_loss, self.guided_alignment = losses
        self.dist, self.device, self.settings, self.precision = dist, dist.device, settings, settings.precision
        self.run_dir, self.ckpt_dir = Path(run_dir), Path(run_dir) / "checkpoints"
        self.checkpoint_info, self.reporter = checkpoint_info, reporter
        self.progress, self.budget, self.probs = Progress(), TimeBudget(settings.max_minutes), UpdateScratch()
        self.stop_signal: int | None = None
        self.final_metrics: dict | None = None    # the last validation's record
        self.summary: dict | None = None          # summary.json of a run that finished
        self.window = {"tokens": 0, "time": 0.0, "loss": 0.0, "updates": 0}   # since the last log line
        self.mark = 0.0        # perf_counter when the last update's validation and checkpoints ended
        self.test_pairs = data.test[:settings.test_max_sentences]   # best.pt's, at the end
        averaged = (settings.average_last > 0) + (settings.average_best > 0)   # validated at the end too
        self.final_cost = FinalCost(len(validation.pairs), len(self.test_pairs), averaged,
                                    60 * (settings.max_minutes or 0))
        self.graphed = None    # trainer.cuda_graphs: a GraphedUpdate, set by build_trainer

    @property
    def step(self) -> int:
        return self.progress.step

    @property
    def valid_pairs(self) -> list:
        return self.validation.pairs

    # -- checkpoints -----------------------------------------------------------
    def checkpoint_state(self) -> dict:
        progress = self.progress.state_dict()
        # batch_index counts the epoch's batches of all ranks, so any number of ranks can resume
        progress["batch_index"] = self.dist.to_global(self.progress.batch_index)
        progress.update(self.budget.state_dict())
        return {**self.checkpoint_info, "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(), "schedule": self.schedule.state_dict(),
                "scaler": self.scaler.state_dict(), "progress": progress, "rng": rng_state()}

    def resume(self, path: Path) -> None:
        state = load_checkpoint(path)
        require_resume_state(state, path)      # weights only (averaged): one line, not a KeyError
        check_fingerprint(state, self.checkpoint_info["fingerprint"], path, force=self.settings.resume_force)
        try:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
        except (RuntimeError, ValueError, KeyError) as error:
            raise NmtError(f"cannot resume from {path}: it was trained with another model or "
                           f"optimiser config ({str(error).splitlines()[0][:120]})") from None
        self.schedule.load_state_dict(state["schedule"])
        if state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        self.progress.load_state_dict(state["progress"])
        self.progress.batch_index = self.dist.to_local(self.progress.batch_index)
        self.budget.load_state_dict(state["progress"])
        set_rng_state(state["rng"])
        log.info("resumed from %s at step %d (epoch %d, batch %d)", path, self.progress.step,
                 self.progress.epoch, self.progress.batch_index)

    def save(self, name: str, *also: str) -> Path:
        """checkpoints/`name`, and each of `also` as another name of the same file."""
        return save_checkpoint(self.checkpoint_state(), self.ckpt_dir / name, also=[self.ckpt_dir / a for a in also])

    # -- one update ----------------------------------------------------------
    def _batch_loss(self, batch, counts: dict, aux: dict):
        """The loss of one batch, normalised by the whole update's `counts`
        (tokens, sentences, linked target positions), and its summed NLL."""
        src, tgt = to_device(batch.src, self.device), to_device(batch.tgt, self.device)
        labels = tgt[:, 1:]
        with autocast(self.device, self.precision), compile_errors(self.settings.compile):
            if self.guided_alignment.weight:   # every layer's cross-attention (Transformer)
                out, penalty = self.forward(src, tgt[:, :-1], need_weights=True)
            else:
                out, penalty = self.forward(src, tgt[:, :-1])
        smoothed, nll = token_losses(out.logits, labels, PAD, self.settings.label_smoothing, self.probs)  # (B, T) each
        loss = smoothed.sum() / counts["tokens"] + penalty * len(batch.src) / counts["sentences"]
        if self.coverage_loss.weight:  # See et al. 2017: lambda * sum_i min(a_t,i, c_t,i)
            covered = self.coverage_loss(out.weights, out.coverage, labels, PAD) / counts["tokens"]
            loss = loss + self.coverage_loss.weight * covered
            aux["coverage_loss"] = aux.get("coverage_loss", 0.0) + float(covered.detach())
        if self.guided_alignment.weight:   # Garg et al. 2019: -1/|T| sum G log a
            guided, _ = self.guided_alignment(self.model.decoder, out, batch.alignment)
            guided = guided / max(1, counts["linked"])
            loss = loss + self.guided_alignment.weight * guided
            aux["guided_alignment_loss"] = aux.get("guided_alignment_loss", 0.0) + float(guided.detach())
        if out.log_prob is not None:   # hard attention: score-function term
            surrogate, reward = reinforce_loss(out.log_prob, nll, labels, PAD, self.progress.baseline)
            loss = loss + surrogate * len(batch.src) / counts["sentences"]
            decay = self.settings.hard_baseline_decay
            self.progress.baseline = decay * self.progress.baseline + (1 - decay) * reward
        return loss, nll

    def train_update(self, batches) -> dict:
        """Forward and backward over `accumulate` batches (on every rank), then one optimiser step."""
        if self.graphed:       # one batch, its update replayed from a CUDA graph
            return self.graphed.train_update(batches, self._budget_fraction)
        # Losses are normalised by the tokens and sentences of the whole update, all
        # ranks together; DDP averages gradients over ranks, so `ranks` turns that into a sum.
        n_tokens, n_sentences = map(int, self.dist.sum(
            sum(int((b.tgt[:, 1:] != PAD).sum()) for b in batches), sum(len(b.src) for b in batches)))
        counts = {"tokens": n_tokens, "sentences": n_sentences, "linked": 0}
        if self.guided_alignment.weight:       # target positions with a link, the update's |T|
            (counts["linked"],) = map(int, self.dist.sum(sum(int((b.alignment.sum(-1) > 0).sum())
                                                             for b in batches)))
        total_loss, total_nll, finite, aux = 0.0, 0.0, True, {}
        self.optimizer.zero_grad(set_to_none=True)
        for i, batch in enumerate(batches):
            with self.dist.no_sync(self.parallel, last=i == len(batches) - 1):
                loss, nll = self._batch_loss(batch, counts, aux)
                if not torch.isfinite(loss):
                    finite = False
                    if not self.dist.enabled:
                        break                  # under DDP every rank still reaches the all-reduce
                with compile_errors(self.settings.compile), self.dist.peers_alive():   # DDP all-reduces here
                    self.scaler.scale(loss * self.dist.world_size).backward()
            total_loss, total_nll = total_loss + float(loss.detach()), total_nll + float(nll.sum())
        if self.dist.enabled:                  # one rank's bad loss skips the update on all
            bad, total_loss, total_nll = self.dist.sum(not finite, total_loss, total_nll)
            finite = bad == 0
        if not finite:
            self.optimizer.zero_grad(set_to_none=True)
            return {"finite": False}
        self.scaler.unscale_(self.optimizer)
        clip = self.settings.grad_clip or float("inf")
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip))
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.schedule.step_update(self._budget_fraction())    # progress.step: the updates before this one
        if aux and self.dist.enabled:          # every rank's share of the update
            aux = dict(zip(aux, self.dist.sum(*aux.values())))
        return {"finite": True, "loss": total_loss, "nll": total_nll / max(1, n_tokens),
                "grad_norm": grad_norm, "tgt_tokens": n_tokens,
                "src_tokens": sum(int((b.src != PAD).sum()) for b in batches), "aux": aux}

    def _budget_fraction(self) -> float:
        """The budget's share used by the update that just ended, of steps or of minutes (the
        largest the ranks agreed in this process, so it never falls), for schedule=budget_decay."""
        return min(1.0, max((self.progress.step + 1) / self.settings.max_steps, self.budget.highest_spent))

    # -- the loop --------------------------------------------------------------
    def fit(self) -> int:
        """Train until trainer.max_steps, max_epochs or max_minutes, early stopping
        or a stop signal; returns the exit code (128 + N after signal N)."""
        with RunDirLock(self.run_dir) if self.dist.is_main else nullcontext():
            try:
                code = self._fit()
                self.dist.barrier()            # the other ranks wait while rank 0 writes
                return code
            finally:
                self.dist.close()

    def _fit(self) -> int:
        self._start()
        previous = {s: signal.signal(s, self._note_signal) for s in signals.STOP_SIGNALS}
        self.model.train()
        bar = Display(self.settings.max_steps, self.progress.step, self.dist.is_main)
        self.budget.start()
        self.mark = time.perf_counter()
        try:
            self._run(bar)
        except Stop:                           # a stop signal: the update in progress was finished
            if self.stop_signal is not None and self.dist.is_main:
                self.save("last.pt")
        except PeerLost as lost:               # the last finished update is kept; the one in progress is not
            if self.dist.is_main:
                self.save("last.pt")
            raise PeerLost(f"{lost} (at step {self.progress.step}; checkpoint {self.ckpt_dir / 'last.pt'}, "
                           f"continue with: {continue_command(self.run_dir)})") from None
        finally:
            bar.close()
            signals.note_leaving_error(NmtError)   # a stop signal before its line writes that line
            signals.set_context(f"after training; checkpoints in {self.ckpt_dir}")
            for s, handler in previous.items():
                signal.signal(s, handler)
            self.reporter.close(drop=self.stop_signal is not None)   # a stop signal: no waiting for heatmaps
        if self.stop_signal is None:
            return 0
        if self.dist.is_main:                  # also a signal during the final validation
            signals.report(self.stop_signal, f"at step {self.progress.step}; checkpoint "
                           f"{self.ckpt_dir / 'last.pt'}; continue with: {continue_command(self.run_dir)}")
        return signals.exit_code(self.stop_signal)

    def _note_signal(self, signum, frame) -> None:   # the loop stops after the update in progress
        self.stop_signal = signum

    def _start(self) -> None:
        """Resume, start from weights only, or start fresh (refusing a folder that
        holds any trace of a run); seed the ranks, open the reports."""
        weights_only = self.settings.resume_weights_only
        resume = find_resume_checkpoint(self.settings.resume, self.run_dir, weights_only)
        if (resume is None or weights_only) and holds_a_run(self.run_dir):   # a new run: never over a run's files
            raise holds_a_run_error(self.run_dir)
        if weights_only:                       # a fresh optimiser and schedule from step 0
            load_start_weights(self.model, resume, self.checkpoint_info["fingerprint"], self.settings.resume_force)
            log.info("started from the weights of %s", resume)
        elif resume is not None:
            self.resume(resume)
        if self.dist.enabled:                  # dropout and sampling differ between ranks
            torch.manual_seed(self.dist.rank_seed(self.settings.seed, self.progress.step))
        validated = self.reporter.open(self.progress.step)
        validated = self.dist.broadcast_object(validated if self.dist.is_main else None)
        if self.progress.step and validated:   # not validated twice at one step
            self.progress.last_validated, self.final_metrics = self.progress.step, validated
        log.info("model: %s parameters on %s, %s%s", f"{count_parameters(self.model):,}", self.device,
                 self.precision, " (trainer.precision=auto)" if self.settings.precision_auto else "")

    def _run(self, bar) -> None:
        """The epochs, then a final validation (unless early stopping ended the run) and summary.json."""
        p, s = self.progress, self.settings
        try:
            self.budget.spent = self.budget.fraction(self.budget.seconds_before)   # equal on every rank
            if self.budget.spent >= 1.0:       # a resumed run whose budget was already used up
                log.info("time budget of %g minutes already spent at step %d", s.max_minutes, p.step)
                raise BudgetSpent
            while p.step < s.max_steps and p.epoch < s.max_epochs:
                self._epoch(bar)
            stopped_by = "trainer.max_steps" if p.step >= s.max_steps else "trainer.max_epochs"
        except EarlyStop:
            self._write_summary("trainer.patience", bar)
            return
        except BudgetSpent:
            stopped_by = "trainer.max_minutes"
            self.reporter.drop_heatmaps(self.budget.deadline())   # the final validation's come instead
            self.validation, self.test_pairs = self.final_cost.fit_in_budget(self.validation, self.test_pairs)
        self._validate_and_save(bar, final=True)
        self._write_summary(stopped_by, bar)

    def _epoch(self, bar) -> None:
        """This rank's share of the epoch (all of it for one process), from where the run stands."""
        p, s = self.progress, self.settings
        stream = islice(self.data.train.batches(p.epoch, self.dist.rank, self.dist.world_size),
                        p.batch_index, None)
        fresh_epoch, updates = p.batch_index == 0, 0
        while p.step < s.max_steps:
            group = list(islice(stream, s.accumulate))
            if not self.dist.all(bool(group)):   # the shortest share is spent: all ranks end the epoch
                if fresh_epoch and not updates:
                    raise NmtError(f"epoch {p.epoch} gave no batch to some of the {self.dist.world_size} "
                                   "rank(s); keep more training pairs (data.max_len), lower "
                                   "data.batch_tokens or start fewer ranks")
                p.epoch, p.batch_index = p.epoch + 1, 0
                return
            updates += 1
            self._update(group, bar)

    def _update(self, group, bar) -> None:
        """One update, then what follows it: the log, the stop checks, validation or a step checkpoint."""
        p, s, w = self.progress, self.settings, self.window
        result = self.train_update(group)
        # wall time since the last update's validation and checkpoints: loading the batches and the update
        now = time.perf_counter()
        elapsed, self.mark = now - self.mark, now
        p.batch_index += len(group)
        p.train_seconds += elapsed
        if not result["finite"]:
            p.skip_update(self.settings.max_bad_steps, self.ckpt_dir / "last.pt")
            return
        p.bad_steps, p.step, p.tokens_total = 0, p.step + 1, p.tokens_total + result["tgt_tokens"]
        w["tokens"], w["time"] = w["tokens"] + result["tgt_tokens"], w["time"] + elapsed
        w["loss"], w["updates"] = w["loss"] + result["nll"], w["updates"] + 1
        # the end of the run (final validation, averages, test set) must fit in the budget too
        if s.max_minutes and self.dist.is_main and self.final_cost.probe_due(self.budget.spent):
            probe_search(self.final_cost, self.model, self.translator, self.validation, self.budget.spent)
        self.budget.reserve = self.final_cost.reserve() + self.reporter.heatmap_seconds()
        # a signal to any rank stops all; the time budget's share used, one value on every rank
        signum, self.budget.spent = self.dist.max(self.stop_signal or 0, self.budget.fraction())
        lr, loss = self.optimizer.param_groups[0]["lr"], w["loss"] / w["updates"]
        speed = w["tokens"] / w["time"] if w["time"] else 0.0     # a clock too coarse to see the update
        bar.update(p.step, self.budget.spent, loss, lr, speed, drawing=self.reporter.drawing())
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
        if p.step % s.val_every == 0:
            self._validate_and_save(bar)
            self.final_cost.validation_seconds = time.perf_counter() - now - self.reporter.heatmap_wait()
        elif s.save_every and p.step % s.save_every == 0 and self.dist.is_main:
            self._save_checkpoints()     # between validations, unscored
        self.mark = time.perf_counter()

    # -- validation, checkpoints, summary ----------------------------------------
    def _validate_and_save(self, bar, final: bool = False) -> None:
        p, metric = self.progress, self.settings.metric
        if final and p.last_validated == p.step:
            return
        p.last_validated = p.step
        result, value = None, float("nan")
        if self.dist.is_main:
            with bar.doing("validating"):
                result = self.validation.score(self.model, self.translator, self.device)
            value = {"bleu": result.bleu, "chrf": result.chrf, "loss": result.loss}[metric]
        (value,) = self.dist.broadcast(value, after_main_work=True)  # the others wait for rank 0's score
        score = METRIC_SIGN[metric] * value
        improved = score > p.best
        p.best, p.bad_validations = (score, 0) if improved else (p.best, p.bad_validations + 1)
        self.schedule.step_validation(score)  # on every rank: their learning rates stay equal
        if self.dist.is_main:
            self._write_validation(result, score, improved, final, bar)
        if not final and self.settings.patience and p.bad_validations >= self.settings.patience:
            log.info("early stopping: %s has not improved for %d validations", metric, p.bad_validations)
            raise EarlyStop

    def _write_validation(self, result, score: float, improved: bool, final: bool, bar) -> None:
        """metrics.jsonl, TensorBoard, the log and the checkpoints (rank 0)."""
        p = self.progress
        lr = self.optimizer.param_groups[0]["lr"]
        record = {"step": p.step, "epoch": p.epoch, "loss": result.loss, "perplexity": result.perplexity,
                  "bleu": result.bleu, "chrf": result.chrf, "valid_sentences": len(self.validation.pairs),
                  "lr": lr, "tokens_per_s": p.window_speed(), "train_seconds": p.train_seconds,
                  "bleu_signature": result.bleu_signature, "chrf_signature": result.chrf_signature}
        with bar.doing("drawing attention"):     # reading the maps; a thread draws them
            self.reporter.validation(record, self.translator, self.validation.heatmap_pairs)
        log.info("validation step %d epoch %d | loss %.3f ppl %.2f | BLEU %.2f chrF %.2f | lr %.2e | "
                 "%.0f tok/s%s", p.step, p.epoch, result.loss, result.perplexity, result.bleu, result.chrf,
                 lr, record["tokens_per_s"], " | new best" if improved else "")
        if not p.step_scores:                  # the signatures once a run, at its first validation
            log.info("sacreBLEU %s | chrF %s", result.bleu_signature, result.chrf_signature)
        p.step_scores[p.step] = score          # before last.pt: a resumed run knows it
        self._save_checkpoints("last.pt", *(["best.pt"] if improved else []))
        self.final_metrics = record
        if final:
            self.reporter.final_hparams(result)

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

    def _write_summary(self, stopped_by: str, bar) -> None:
        """summary.json (rank 0), its wall_s after the run's end; `stopped_by`: what ended the run."""
        if not self.dist.is_main:
            return
        p, s = self.progress, self.settings
        summary = end_of_run_scores(self.ckpt_dir, s, p.step_scores, self.test_pairs, bar,
                                    model=self.model, make_translator=self.make_translator,
                                    validation=self.validation, device=self.device, reporter=self.reporter,
                                    step=p.step)
        summary = {**run_summary(self.final_metrics, p, s.metric, count_parameters(self.model),
                                 self.budget.wall_seconds(), stopped_by), **summary}
        self.reporter.summary(summary)
        self.summary = summary
