"""The training loop: token-budget batches, masked label-smoothed loss,
validation with BLEU and chrF, checkpoints, exact resume, TensorBoard;
data-parallel over the ranks torchrun starts (`distributed.py`)."""

import copy
import json
import logging
import math
import random
import shlex
import signal
import time
from contextlib import contextmanager, nullcontext
from itertools import islice
from pathlib import Path

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from nmt import signals
from nmt.cli_checks import guard_stdout_logging, write_stdout
from nmt.average import average_checkpoints
from nmt.data.batching import TokenBatcher
from nmt.data.pipeline import prepare_data
from nmt.errors import NmtError
from nmt.models.build import build_model, count_parameters
from nmt.training.checkpoints import (METRIC_SIGN, best_steps, check_fingerprint, data_fingerprint,
                                      load_checkpoint, prune_step_checkpoints, require_resume_state,
                                      save_checkpoint, step_checkpoints, step_of)
from nmt.training.device import resolve_device
from nmt.training.distributed import Distributed
from nmt.training.coverage_loss import CoverageLoss
from nmt.training.guided_alignment import GuidedAlignmentLoss
from nmt.training.loss import reinforce_loss, token_losses
from nmt.run_files import holds_a_run
from nmt.training.run_dir import RunDirLock, drop_metrics_after, find_resume_checkpoint, holds_a_run_error
from nmt.training.tensorboard import log_attention_images
from nmt.training.precision import CHOICES, PRECISIONS, resolve_precision
from nmt.training.validation import validate
from nmt.translator import Translator, length_limits

log = logging.getLogger("nmt.train")
PAD = 0
FINAL_KEYS = {"bleu", "chrf", "perplexity", "loss", "bleu_signature"}   # of a metrics.jsonl record


class Stop(Exception):
    """Raised inside the loop to end training early (signal, early stopping)."""


class Trainer:
    def __init__(self, cfg: DictConfig, run_dir: Path):
        self.cfg, self.tc = cfg, cfg.trainer
        self.run_dir = Path(run_dir)
        self.ckpt_dir = self.run_dir / "checkpoints"
        if self.tc.metric not in METRIC_SIGN:
            raise NmtError(f"trainer.metric={self.tc.metric!r} unknown; choose one of {sorted(METRIC_SIGN)}")
        if self.tc.precision not in CHOICES:
            raise NmtError(f"trainer.precision={self.tc.precision!r} unknown; choose one of {sorted(CHOICES)}")
        device = resolve_device(self.tc.device)
        self.precision = resolve_precision(str(self.tc.precision), device)   # auto decided for this machine
        if self.precision == "fp16" and device.type != "cuda":
            raise NmtError("trainer.precision=fp16 needs a GPU; use fp32 or bf16 on CPU")
        self.dist = Distributed.start(device)      # one process, or this rank under torchrun
        self.device = self.dist.device
        self.run_dir = Path(self.dist.broadcast_object(str(self.run_dir)))   # rank 0's folder
        self.ckpt_dir = self.run_dir / "checkpoints"
        self._seed(int(self.tc.seed))

        cache_dir = Path(cfg.get("cache_dir", "data"))
        with self.dist.main_first():              # rank 0 trains and caches the vocabulary
            self.data = prepare_data(cfg.data, cache_dir, int(self.tc.seed))
        self.tokenizer = self.data.tokenizer
        self.model = build_model(cfg.model, self.tokenizer.src_vocab_size,
                                 self.tokenizer.tgt_vocab_size).to(self.device)
        self.parallel = self.dist.wrap(self.model)    # DistributedDataParallel under torchrun
        # Token-budget batches vary in both B and T: shapes are dynamic from the first step, so one
        # compile instead of three (static, then T dynamic, then B too); same kernels in the end.
        self.forward = torch.compile(self.parallel, dynamic=True) if self.tc.compile else self.parallel
        self.optimizer = instantiate(cfg.optimizer)(params=self.model.parameters())
        self.schedule = instantiate(cfg.schedule)(optimizer=self.optimizer)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.precision == "fp16")
        self.translator = Translator(self.model, self.tokenizer, self.device, **length_limits(cfg))
        self._attention_losses(cfg)

        valid = self.data.valid
        if self.tc.val_max_sentences:
            valid = valid[: int(self.tc.val_max_sentences)]
        self.valid_pairs = valid
        self.valid_batches = TokenBatcher(
            [(self.tokenizer.encode_src(s), self.tokenizer.encode_tgt(t)) for s, t in valid],
            int(cfg.data.batch_tokens), shuffle=False, seed=0).batches(0)
        self.heatmap_pairs = valid[: int(self.tc.heatmap_sentences)]

        # Progress: everything needed to continue exactly where a run stopped.
        self.step, self.epoch, self.batch_index = 0, 0, 0
        self.best, self.bad_validations, self.bad_steps = -math.inf, 0, 0
        self.baseline, self.train_seconds, self.tokens_total = 0.0, 0.0, 0
        # Wall-clock seconds the run has spent in its training loop (validations included) before
        # this process, and when this process's loop began: trainer.max_minutes is the whole run's.
        self.wall_seconds_before, self.loop_started = 0.0, None
        self.minutes_spent = 0.0  # share of max_minutes used, as every rank agreed after the last update
        self.skipped, self.stop_signal = 0, None
        self.step_scores: dict[int, float] = {}   # validated step -> score (higher is better), for average_best

    # -- set-up helpers ------------------------------------------------------
    def _attention_losses(self, cfg: DictConfig) -> None:
        """Weights of the coverage loss (model.attention.coverage_loss_weight, coverage
        attention only) and of guided alignment (trainer.guided_alignment), checked."""
        self.coverage_loss = CoverageLoss()
        if getattr(self.model.decoder, "coverage", False):
            self.coverage_loss = CoverageLoss(_weight(cfg.model.attention.get("coverage_loss_weight", 0.0),
                                                      "model.attention.coverage_loss_weight"))
        beta = self.tc.get("coverage_penalty", 0.0)
        self.coverage_penalty = _weight(beta, "trainer.coverage_penalty")
        if self.coverage_penalty and int(self.tc.val_beam_size) < 2:
            raise NmtError(f"trainer.coverage_penalty={beta} re-ranks the validation beam's hypotheses; "
                           "set trainer.val_beam_size to 2 or more")
        guided = self.tc.get("guided_alignment") or {}
        self.guided_alignment = GuidedAlignmentLoss(
            _weight(guided.get("weight", 0.0), "trainer.guided_alignment.weight"),
            guided.get("layer", -2), guided.get("head", 0))
        if self.guided_alignment.weight:
            if getattr(self.data.train, "guides", None) is None:
                raise NmtError("trainer.guided_alignment.weight > 0 needs data.train_alignments, a file of "
                               "word links 'i-j' per training pair (python -m nmt.data.alignments toy "
                               "FILE writes the toy task's)")
            self.guided_alignment.check(self.model.decoder)

    @staticmethod
    def _seed(seed: int) -> None:
        random.seed(seed)
        torch.manual_seed(seed)

    def _rng_state(self) -> dict:
        state = {"torch": torch.get_rng_state(), "python": random.getstate()}
        if torch.cuda.is_available():
            state["cuda"] = torch.cuda.get_rng_state_all()
        return state

    def _set_rng_state(self, state: dict) -> None:
        torch.set_rng_state(state["torch"])
        random.setstate(_as_python_state(state["python"]))
        if "cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])

    def checkpoint_state(self) -> dict:
        return {
            "config": OmegaConf.to_container(self.cfg, resolve=True),
            "tokenizer": self.tokenizer.to_bytes(),
            "fingerprint": data_fingerprint(self.cfg.data, self.tokenizer.to_bytes()),  # checked on resume
            "samples": [src for src, _ in self.valid_pairs[:20]],   # for the explorer
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "schedule": self.schedule.state_dict(),
            "scaler": self.scaler.state_dict(),
            # batch_index counts the epoch's batches of all ranks, so any number of ranks can resume
            "progress": {"step": self.step, "epoch": self.epoch,
                         "batch_index": self.dist.to_global(self.batch_index),
                         "best": self.best, "bad_validations": self.bad_validations,
                         "baseline": self.baseline, "train_seconds": self.train_seconds,
                         "wall_seconds": self.wall_seconds(), "tokens_total": self.tokens_total,
                         "step_scores": {str(k): v for k, v in self.step_scores.items()}},
            "rng": self._rng_state(),
        }

    def resume(self, path: Path) -> None:
        state = load_checkpoint(path)
        require_resume_state(state, path)      # weights only (averaged): one line, not a KeyError
        check_fingerprint(state, data_fingerprint(self.cfg.data, self.tokenizer.to_bytes()), path,
                          force=bool(self.tc.get("resume_force", False)))
        try:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
        except (RuntimeError, ValueError, KeyError) as error:
            raise NmtError(f"cannot resume from {path}: it was trained with another model or "
                           f"optimiser config ({str(error).splitlines()[0][:120]})") from None
        self.schedule.load_state_dict(state["schedule"])
        if state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        progress = state["progress"]
        self.step, self.epoch = int(progress["step"]), int(progress["epoch"])
        self.batch_index = self.dist.to_local(int(progress["batch_index"]))
        self.best, self.bad_validations = float(progress["best"]), int(progress["bad_validations"])
        self.baseline, self.train_seconds = float(progress["baseline"]), float(progress["train_seconds"])
        self.tokens_total = int(progress["tokens_total"])
        self.wall_seconds_before = float(progress.get("wall_seconds", 0.0))   # absent before budgets resumed
        self.step_scores = {int(k): float(v) for k, v in progress.get("step_scores", {}).items()}
        self._set_rng_state(state["rng"])
        log.info("resumed from %s at step %d (epoch %d, batch %d)", path, self.step, self.epoch,
                 self.batch_index)

    def start_from_weights(self, path: Path) -> None:
        """trainer.resume_weights_only=true: a new run from a checkpoint's weights
        (an averaged one too), with a fresh optimiser and schedule from step 0."""
        state = load_checkpoint(path)
        check_fingerprint(state, data_fingerprint(self.cfg.data, self.tokenizer.to_bytes()), path,
                          force=bool(self.tc.get("resume_force", False)))
        try:
            self.model.load_state_dict(state["model"])
        except (RuntimeError, ValueError) as error:
            raise NmtError(f"cannot start from the weights of {path}: it was trained with another model "
                           f"({str(error).splitlines()[0][:120]})") from None
        log.info("started from the weights of %s: a fresh optimiser and schedule from step 0", path)

    def wall_seconds(self) -> float:
        """Wall-clock seconds in the training loop over the whole run, resumptions added up."""
        now = 0.0 if self.loop_started is None else time.perf_counter() - self.loop_started
        return self.wall_seconds_before + now

    def _minutes_fraction(self, wall_seconds: float | None = None) -> float:
        """The share of trainer.max_minutes used so far, counted over the whole run
        (0 without a time budget; 1 when it is used up)."""
        if not self.tc.max_minutes:
            return 0.0
        wall = self.wall_seconds() if wall_seconds is None else wall_seconds
        return min(1.0, wall / (60 * float(self.tc.max_minutes)))

    def _budget_fraction(self) -> float:
        """The share of the budget used by the update that just ended: updates of
        trainer.max_steps or minutes of trainer.max_minutes (as all ranks agreed at the
        end of the update before), whichever is further; schedule=budget_decay sets the
        next update's learning rate from it."""
        return min(1.0, max((self.step + 1) / int(self.tc.max_steps), self.minutes_spent))

    def save(self, name: str) -> Path:
        return save_checkpoint(self.checkpoint_state(), self.ckpt_dir / name)

    # -- one update ----------------------------------------------------------
    def _autocast(self):
        dtype = PRECISIONS[self.precision]
        return torch.autocast(self.device.type, dtype=dtype) if dtype else nullcontext()

    @contextmanager
    def _compile_errors(self):
        """trainer.compile=true: torch.compile's own failure (a model or a torch
        version it cannot compile) becomes one line, not Dynamo's pages."""
        try:
            yield
        except torch._dynamo.exc.TorchDynamoException as error:
            if not self.tc.compile:
                raise
            detail = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
            raise NmtError(f"trainer.compile=true: torch {torch.__version__} could not compile this model "
                           f"({type(error).__name__}: {detail}); train without trainer.compile") from None

    def train_update(self, batches) -> dict:
        """Forward and backward over `accumulate` batches (on every rank), then one optimiser step."""
        # Losses are normalised by the tokens and sentences of the whole update, all
        # ranks together; DDP averages gradients over ranks, so `ranks` turns that into a sum.
        n_tokens, n_sentences = map(int, self.dist.sum(
            sum(int((b.tgt[:, 1:] != PAD).sum()) for b in batches), sum(len(b.src) for b in batches)))
        if self.guided_alignment.weight:       # target positions with a link, the update's |T|
            (n_linked,) = map(int, self.dist.sum(sum(int((b.alignment.sum(-1) > 0).sum()) for b in batches)))
        ranks = self.dist.world_size
        total_loss, total_nll, finite = 0.0, 0.0, True
        aux = {}                               # unweighted coverage / guided-alignment loss of the update
        self.optimizer.zero_grad(set_to_none=True)
        for i, batch in enumerate(batches):
            src, tgt = batch.src.to(self.device), batch.tgt.to(self.device)
            labels = tgt[:, 1:]
            with self.dist.no_sync(self.parallel, last=i == len(batches) - 1):
                with self._autocast(), self._compile_errors():
                    if self.guided_alignment.weight:   # every layer's cross-attention (Transformer)
                        out, penalty = self.forward(src, tgt[:, :-1], need_weights=True)
                    else:
                        out, penalty = self.forward(src, tgt[:, :-1])
                smoothed, nll = token_losses(out.logits, labels, PAD, float(self.tc.label_smoothing))  # (B, T) each
                loss = smoothed.sum() / n_tokens + penalty * len(batch.src) / n_sentences
                if self.coverage_loss.weight:  # See et al. 2017: lambda * sum_i min(a_t,i, c_t,i)
                    covered = self.coverage_loss(out.weights, out.coverage, labels, PAD) / n_tokens
                    loss = loss + self.coverage_loss.weight * covered
                    aux["coverage_loss"] = aux.get("coverage_loss", 0.0) + float(covered.detach())
                if self.guided_alignment.weight:   # Garg et al. 2019: -1/|T| sum G log a
                    guided, _ = self.guided_alignment(self.model.decoder, out, batch.alignment)
                    guided = guided / max(1, n_linked)
                    loss = loss + self.guided_alignment.weight * guided
                    aux["guided_alignment_loss"] = aux.get("guided_alignment_loss", 0.0) + float(guided.detach())
                if out.log_prob is not None:   # hard attention: score-function term
                    surrogate, reward = reinforce_loss(out.log_prob, nll, labels, PAD, self.baseline)
                    loss = loss + surrogate * len(batch.src) / n_sentences
                    decay = float(self.tc.hard_baseline_decay)
                    self.baseline = decay * self.baseline + (1 - decay) * reward
                if not torch.isfinite(loss):
                    finite = False
                    if not self.dist.enabled:
                        break                  # under DDP every rank still reaches the all-reduce
                with self._compile_errors():      # the compiled backward is built here
                    self.scaler.scale(loss * ranks).backward()
            total_loss += float(loss.detach())
            total_nll += float(nll.sum())
        if self.dist.enabled:                  # one rank's bad loss skips the update on all
            bad, total_loss, total_nll = self.dist.sum(not finite, total_loss, total_nll)
            finite = bad == 0
        if not finite:
            self.optimizer.zero_grad(set_to_none=True)
            return {"finite": False}
        self.scaler.unscale_(self.optimizer)
        clip = float(self.tc.grad_clip) if self.tc.grad_clip else math.inf
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip))
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.schedule.step_update(self._budget_fraction())    # self.step: the updates before this one
        if aux and self.dist.enabled:          # every rank's share of the update
            aux = dict(zip(aux, self.dist.sum(*aux.values())))
        return {"finite": True, "loss": total_loss, "nll": total_nll / max(1, n_tokens),
                "grad_norm": grad_norm, "tgt_tokens": n_tokens,
                "src_tokens": sum(int((b.src != PAD).sum()) for b in batches), "aux": aux}

    # -- the loop --------------------------------------------------------------
    def _handle_signal(self, signum, frame):
        self.stop_signal = signum

    def fit(self) -> int:
        """Train until max_steps or max_epochs; returns the process exit code."""
        with RunDirLock(self.run_dir) if self.dist.is_main else nullcontext():
            try:
                with logging_redirect_tqdm():   # log lines go above the progress bar, never inside it
                    guard_stdout_logging()     # tqdm's handler too: a full disk is one line at the end
                    code = self._fit()
                self.dist.barrier()            # the other ranks wait while rank 0 writes
                if code == 0 and getattr(self, "finish_lines", None):
                    write_stdout("\n".join(self.finish_lines) + "\n", keep_going=True)  # after the bar is closed
                return code
            finally:
                self.dist.close()

    def _fit(self) -> int:
        weights_only = bool(self.tc.get("resume_weights_only", False))
        resume = find_resume_checkpoint(self.tc.resume, self.run_dir, weights_only)
        if resume is None or weights_only:      # a new run: never over another run's files
            if holds_a_run(self.run_dir):
                raise holds_a_run_error(self.run_dir)
        if weights_only:
            self.start_from_weights(resume)
        elif resume is not None:
            self.resume(resume)
        if self.dist.enabled:                  # dropout and sampling differ between ranks
            torch.manual_seed(self.dist.rank_seed(int(self.tc.seed), self.step))
        self.writer = self.metrics_file = None  # rank 0 alone writes
        if self.dist.is_main:
            self.writer = SummaryWriter(str(self.run_dir / "tensorboard"), purge_step=self.step or None)
            validated = drop_metrics_after(self.run_dir / "metrics.jsonl", self.step)   # each step once
            self.metrics_file = open(self.run_dir / "metrics.jsonl", "a", encoding="utf-8")
        validated = self.dist.broadcast_object(validated if self.dist.is_main else None)
        if self.step and validated and FINAL_KEYS <= validated.keys():   # not validated twice at one step
            self._last_validated, self.final_metrics = self.step, validated
        params = count_parameters(self.model)
        log.info("model: %s parameters on %s, %s%s; data: %s", f"{params:,}", self.device, self.precision,
                 " (trainer.precision=auto)" if self.tc.precision == "auto" else "",
                 ", ".join(f"{k}={v}" for k, v in self.data.stats.items()))
        previous = {s: signal.signal(s, self._handle_signal) for s in signals.STOP_SIGNALS}
        self.model.train()
        # only other ranks pass disable: an explicit value would override TQDM_DISABLE=1
        bar = tqdm(total=int(self.tc.max_steps), initial=self.step, desc="train", unit="step",
                   dynamic_ncols=True, mininterval=1.0, **({} if self.dist.is_main else {"disable": True}))
        window = {"tokens": 0, "time": 0.0, "loss": 0.0, "updates": 0}
        code, self.loop_started = 0, time.perf_counter()
        save_every = int(self.tc.get("save_every", 0))
        try:
            self.minutes_spent = self._minutes_fraction(self.wall_seconds_before)   # the same on every rank
            if self.minutes_spent >= 1.0:       # a resumed run whose budget was already used up
                log.info("time budget of %s minutes already spent at step %d", self.tc.max_minutes, self.step)
                raise _BudgetSpent
            while self.step < int(self.tc.max_steps) and self.epoch < int(self.tc.max_epochs):
                # This rank's share of the epoch (all of it for one process), from where the run stands.
                share = self.data.train.batches(self.epoch, self.dist.rank, self.dist.world_size)
                stream = islice(share, self.batch_index, None)
                accumulate = max(1, int(self.tc.accumulate))
                fresh_epoch, updates = self.batch_index == 0, 0
                while self.step < int(self.tc.max_steps):
                    group = list(islice(stream, accumulate))
                    if not self.dist.all(bool(group)):   # the shortest share is spent: all ranks end the epoch
                        if fresh_epoch and not updates:
                            raise NmtError(f"epoch {self.epoch} gave no batch to some of the "
                                           f"{self.dist.world_size} rank(s); keep more training pairs "
                                           "(data.max_len), lower data.batch_tokens or start fewer ranks")
                        self.epoch += 1
                        self.batch_index = 0
                        break
                    updates += 1
                    step_started = time.perf_counter()
                    result = self.train_update(group)
                    elapsed = time.perf_counter() - step_started
                    self.batch_index += len(group)
                    self.train_seconds += elapsed
                    if not result["finite"]:
                        self._bad_step()
                        continue
                    self.bad_steps = 0
                    self.step += 1
                    self.tokens_total += result["tgt_tokens"]
                    window["tokens"] += result["tgt_tokens"]
                    window["time"] += elapsed
                    window["loss"] += result["nll"]
                    window["updates"] += 1
                    bar.update(1)
                    if self.step % int(self.tc.log_every) == 0 or self.step == 1:
                        if self.dist.is_main:
                            self._log_train(result, window, bar)
                        window = {"tokens": 0, "time": 0.0, "loss": 0.0, "updates": 0}
                    # a signal to any rank stops all; the time budget's share used, one value on every rank
                    signum, self.minutes_spent = self.dist.max(self.stop_signal or 0, self._minutes_fraction())
                    if signum:
                        self.stop_signal = self.stop_signal or int(signum)
                        raise Stop
                    if self.minutes_spent >= 1.0:      # trainer.max_minutes used up, over the whole run
                        log.info("time budget of %s minutes reached at step %d", self.tc.max_minutes, self.step)
                        raise _BudgetSpent
                    if self.step % int(self.tc.val_every) == 0:
                        self._validate_and_save(window_speed=self._speed())
                    elif save_every and self.step % save_every == 0 and self.dist.is_main:
                        self._save_step_checkpoint()     # between validations, unscored
            self._validate_and_save(window_speed=self._speed(), final=True)
            self._write_summary()
        except _BudgetSpent:
            self._validate_and_save(window_speed=self._speed(), final=True)
            self._write_summary()
        except _EarlyStop:
            self._write_summary()
        except Stop:
            if self.stop_signal is not None and self.dist.is_main:
                self.save("last.pt")
        finally:
            bar.close()
            signals.set_context(f"after training; checkpoints in {self.ckpt_dir}")
            for s, handler in previous.items():
                signal.signal(s, handler)
            if self.dist.is_main:
                self.writer.close()
                self.metrics_file.close()
        if self.stop_signal is not None:       # also a signal during the final validation
            code = signals.exit_code(self.stop_signal)
            if self.dist.is_main:
                signals.report(self.stop_signal, f"at step {self.step}; checkpoint {self.ckpt_dir / 'last.pt'} "
                               f"(continue with trainer.resume=auto hydra.run.dir={self.run_dir})")
        return code

    def _write_summary(self) -> None:
        """summary.json: what nmt.compare puts in its table."""
        if not self.dist.is_main:
            return
        m = self.final_metrics
        summary = {"parameters": count_parameters(self.model), "bleu": m["bleu"], "chrf": m["chrf"],
                   "perplexity": m["perplexity"], "loss": m["loss"], "step": self.step,
                   "tokens_per_s": self._speed(), "wall_s": self.wall_seconds(),
                   "train_seconds": self.train_seconds, "best": METRIC_SIGN[self.tc.metric] * self.best,
                   "metric": self.tc.metric, "skipped_updates": self.skipped,
                   "bleu_signature": m["bleu_signature"], **self._averages()}
        (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        self.finish_lines = finish_lines(self.run_dir, self.tc.metric, summary["best"], self.step,
                                         self.valid_pairs[0][0] if self.valid_pairs else None)

    def _averages(self) -> dict:
        """trainer.average_last=N and trainer.average_best=N: the last N step
        checkpoints averaged into checkpoints/averaged.pt, the N best-validated
        ones into checkpoints/averaged_best.pt; their scores for summary.json."""
        steps = step_checkpoints(self.ckpt_dir)
        scores = {}
        n = int(self.tc.get("average_last", 0))
        if n > 0 and steps:
            scores.update(self._average(steps[-n:], n, "average_last", "averaged"))
        n = int(self.tc.get("average_best", 0))
        best = set(best_steps(self.step_scores, n))
        if n > 0 and best:
            scores.update(self._average([p for p in steps if step_of(p) in best], n, "average_best",
                                        "averaged_best"))
        return scores

    def _average(self, steps: list[Path], n: int, key: str, name: str) -> dict:
        """Average `steps` into checkpoints/NAME.pt (nmt.average, which refuses
        checkpoints of another vocabulary or model config), validate it as
        best.pt is; its scores as NAME_*, also in TensorBoard under NAME/."""
        if not steps:
            return {}
        if len(steps) < n:
            log.warning("trainer.%s=%d: the run kept %d step checkpoints for it; averaging those",
                        key, n, len(steps))
        try:
            state = average_checkpoints(steps)
        except NmtError as error:     # e.g. a resume_force'd run changed its vocabulary
            log.warning("no %s.pt: %s", name, error)
            return {}
        model = copy.deepcopy(self.model)
        model.load_state_dict(state["model"])
        translator = Translator(model, self.tokenizer, self.device, **length_limits(self.cfg))
        result = validate(model, translator, self.valid_batches, self.valid_pairs, self.device,
                          int(self.tc.val_beam_size), self.coverage_penalty)
        path = save_checkpoint(state, self.ckpt_dir / f"{name}.pt")
        for tag in ("loss", "perplexity", "bleu", "chrf"):
            self.writer.add_scalar(f"{name}/{tag}", getattr(result, tag), self.step)
        log.info("averaged %d checkpoints (steps %s) into %s | loss %.3f ppl %.2f | BLEU %.2f chrF %.2f",
                 len(steps), ", ".join(str(step_of(p)) for p in steps), path, result.loss,
                 result.perplexity, result.bleu, result.chrf)
        return {f"{name}_bleu": result.bleu, f"{name}_chrf": result.chrf, f"{name}_loss": result.loss,
                f"{name}_perplexity": result.perplexity, f"{name}_steps": [step_of(p) for p in steps]}

    def _speed(self) -> float:
        """Target tokens per second of training time since the run began."""
        return self.tokens_total / self.train_seconds if self.train_seconds else 0.0

    def _bad_step(self) -> None:
        self.bad_steps += 1
        self.skipped += 1
        log.warning("non-finite loss at step %d: update skipped (%d in a row)", self.step + 1,
                    self.bad_steps)
        if self.bad_steps >= int(self.tc.max_bad_steps):
            kept = self.ckpt_dir / "last.pt"
            where = f"last good checkpoint {kept}" if kept.exists() else "no checkpoint was written yet"
            raise NmtError(f"loss was not finite for {self.bad_steps} updates in a row at step "
                           f"{self.step + 1}; {where}; lower optimizer.lr or use trainer.grad_clip")

    def _log_train(self, result: dict, window: dict, bar) -> None:
        speed = window["tokens"] / window["time"] if window["time"] else 0.0
        lr = self.optimizer.param_groups[0]["lr"]
        loss = window["loss"] / max(1, window["updates"])
        bar.set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{speed:.0f}")
        for tag, value in (("train/loss", loss), ("train/perplexity", math.exp(min(loss, 50))),
                           ("train/lr", lr), ("train/grad_norm", result["grad_norm"]),
                           ("train/tokens_per_s", speed)):
            self.writer.add_scalar(tag, value, self.step)
        for name, value in result.get("aux", {}).items():   # coverage / guided alignment, this update
            self.writer.add_scalar(f"train/{name}", value, self.step)

    def _validate_and_save(self, window_speed: float, final: bool = False) -> None:
        if final and getattr(self, "_last_validated", None) == self.step:
            return
        self._last_validated = self.step
        result, value = None, math.nan
        if self.dist.is_main:
            result = validate(self.model, self.translator, self.valid_batches, self.valid_pairs,
                              self.device, int(self.tc.val_beam_size), self.coverage_penalty)
            value = {"bleu": result.bleu, "chrf": result.chrf, "loss": result.loss}[self.tc.metric]
        (value,) = self.dist.broadcast(value)  # the other ranks wait for rank 0's score
        score = METRIC_SIGN[self.tc.metric] * value
        improved = score > self.best
        if improved:
            self.best, self.bad_validations = score, 0
        else:
            self.bad_validations += 1
        self.schedule.step_validation(score)  # on every rank: their learning rates stay equal
        if self.dist.is_main:
            self._write_validation(result, score, improved, window_speed, final)
        if not final and int(self.tc.patience) and self.bad_validations >= int(self.tc.patience):
            log.info("early stopping: %s has not improved for %d validations",
                     self.tc.metric, self.bad_validations)
            raise _EarlyStop

    def _write_validation(self, result, score: float, improved: bool, window_speed: float,
                          final: bool) -> None:
        """metrics.jsonl, TensorBoard, the log and the checkpoints (rank 0)."""
        lr = self.optimizer.param_groups[0]["lr"]
        record = {"step": self.step, "epoch": self.epoch, "loss": result.loss,
                  "perplexity": result.perplexity, "bleu": result.bleu, "chrf": result.chrf,
                  "lr": lr, "tokens_per_s": window_speed, "train_seconds": self.train_seconds,
                  "bleu_signature": result.bleu_signature, "chrf_signature": result.chrf_signature}
        self.metrics_file.write(json.dumps(record) + "\n")
        self.metrics_file.flush()
        for tag in ("loss", "perplexity", "bleu", "chrf"):
            self.writer.add_scalar(f"valid/{tag}", record[tag], self.step)
        log_attention_images(self.writer, self.translator, self.heatmap_pairs, self.step)
        log.info("validation step %d epoch %d | loss %.3f ppl %.2f | BLEU %.2f chrF %.2f | "
                 "lr %.2e | %.0f tok/s%s", self.step, self.epoch, result.loss, result.perplexity,
                 result.bleu, result.chrf, lr, window_speed, " | new best" if improved else "")
        log.info("sacreBLEU %s | chrF %s", result.bleu_signature, result.chrf_signature)
        self.step_scores[self.step] = score   # before last.pt: a resumed run knows it
        self.save("last.pt")
        if improved:
            self.save("best.pt")
        self._save_step_checkpoint()
        self.final_metrics = record
        if final:
            self.writer.add_hparams(_hparams(self.cfg), {
                "hparam/bleu": result.bleu, "hparam/chrf": result.chrf,
                "hparam/perplexity": result.perplexity}, run_name="hparams")

    def _save_step_checkpoint(self) -> None:
        """checkpoints/step_N.pt, then the oldest pruned: trainer.keep_last newest
        (at least trainer.average_last, which averages them) and the
        trainer.average_best best-validated ones are kept."""
        newest = max(int(self.tc.keep_last), int(self.tc.get("average_last", 0)))   # averaging needs N
        best = int(self.tc.get("average_best", 0))
        if newest > 0 or best > 0:
            self.save(f"step_{self.step}.pt")
            prune_step_checkpoints(self.ckpt_dir, newest, also_keep=best_steps(self.step_scores, best))


class _EarlyStop(Stop):
    pass


class _BudgetSpent(Stop):
    pass


def finish_lines(run_dir: Path, metric: str, best: float, step: int, example: str | None) -> list[str]:
    """The end-of-run summary: the best validation score, where best.pt is, and
    the next commands with the real paths, quoted for a POSIX shell."""
    run_dir = Path(run_dir).resolve()
    best_pt = run_dir / "checkpoints" / "best.pt"
    if not best_pt.exists():               # no validation scored (a non-finite score)
        best_pt = best_pt.with_name("last.pt")
    name = {"bleu": "BLEU", "chrf": "chrF", "loss": "loss"}[metric]
    checkpoint = shlex.quote(str(best_pt))
    echo = f"echo {shlex.quote(example)} | " if example else ""
    return [f"nmt: finished at step {step}; best validation {name} {best:.2f}",
            f"  {best_pt.stem} checkpoint: {best_pt}",
            "  next:",
            f"    {echo}python -m nmt.translate --checkpoint {checkpoint}",
            f"    tensorboard --logdir {shlex.quote(str(run_dir / 'tensorboard'))}",
            f"    python -m nmt.explore --checkpoint {checkpoint}"]


def _weight(value, key: str) -> float:
    """A loss weight or penalty from the config: a finite number >= 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not 0 <= number < math.inf:
        raise NmtError(f"{key}={value!r} must be a finite number >= 0 (0 = off)")
    return number


def _as_python_state(state):
    """random.getstate() comes back from a checkpoint with lists for tuples."""
    version, internal, gauss = state
    return (version, tuple(internal), gauss)


def _hparams(cfg: DictConfig) -> dict:
    flat = {}
    for group in ("encoder", "decoder", "attention", "bridge", "positional"):
        target = cfg.model[group].get("_target_", "")
        flat[group] = target.rsplit(".", 1)[-1]
    scope = cfg.model.attention.get("scope")
    if scope:
        flat["scope"] = scope
    flat["data"] = str(cfg.data.kind)
    flat["lr"] = float(cfg.optimizer.lr)
    return flat
