"""The trainer's settings (the `trainer` config read once, as typed values) and
its parts (the model, optimiser, data, losses, ... that `build.py` makes).

The builder makes both from the config after nmt.config_schema has checked
every value, so the loop never reads the config itself.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


@dataclass(frozen=True)
class TrainSettings:
    max_steps: int
    max_epochs: int
    max_minutes: float  # wall-clock budget of the whole run; 0 = none
    val_every: int
    log_every: int
    save_every: int  # step_N.pt between validations; 0 = at validations only
    accumulate: int  # batches per update
    grad_clip: float  # max gradient norm; 0 = no clipping
    label_smoothing: float
    metric: str  # bleu | chrf | loss
    patience: int  # validations without improvement before stopping; 0 = never
    val_beam_size: int
    test_max_sentences: int | None  # best.pt scored on this many test sentences at the end; None = all
    coverage_penalty: float
    hard_baseline_decay: float
    max_bad_steps: int
    keep_last: int
    average_last: int
    average_best: int
    resume: str | None
    resume_force: bool
    resume_weights_only: bool  # a new run from trainer.resume's weights (fresh optimiser, step 0)
    seed: int
    compile: bool
    compile_mode: str  # torch.compile's mode: default | reduce-overhead | max-autotune | max-autotune-no-cudagraphs
    cuda_graphs: bool  # each batch shape's update (forward, loss, backward, clipping) replayed from a CUDA graph
    precision: str  # fp32 | bf16 | fp16: what `auto` resolved to on this machine
    precision_auto: bool  # trainer.precision=auto chose it
    speedups: str  # trainer.speedups: auto | off (nmt.speedups.choice)

    @classmethod
    def from_config(cls, tc, precision: str) -> "TrainSettings":
        """`tc`: the checked `trainer` config; `precision`: its precision resolved."""
        return cls(
            max_steps=int(tc.max_steps),
            max_epochs=int(tc.max_epochs),
            max_minutes=float(tc.max_minutes) if tc.max_minutes else 0.0,
            val_every=int(tc.val_every),
            log_every=int(tc.log_every),
            save_every=int(tc.save_every),
            accumulate=max(1, int(tc.accumulate)),
            grad_clip=float(tc.grad_clip or 0.0),
            label_smoothing=float(tc.label_smoothing),
            metric=str(tc.metric),
            patience=int(tc.patience),
            val_beam_size=int(tc.val_beam_size),
            test_max_sentences=None if tc.test_max_sentences is None else int(tc.test_max_sentences),
            coverage_penalty=float(tc.coverage_penalty),
            hard_baseline_decay=float(tc.hard_baseline_decay),
            max_bad_steps=int(tc.max_bad_steps),
            keep_last=int(tc.keep_last),
            average_last=int(tc.average_last),
            average_best=int(tc.average_best),
            resume=None if tc.resume is None else str(tc.resume),
            resume_force=bool(tc.resume_force),
            resume_weights_only=bool(tc.resume_weights_only),
            seed=int(tc.seed),
            compile=bool(tc.compile),
            compile_mode=str(tc.compile_mode),
            cuda_graphs=bool(tc.cuda_graphs),
            precision=precision,
            precision_auto=tc.precision == "auto",
            speedups=str(tc.speedups),
        )


@dataclass
class TrainerParts:
    """What the training loop (nmt.training.loop.Trainer) trains with."""

    model: Any  # the Seq2Seq
    parallel: Any  # the model DDP wraps (or the model)
    forward: Callable  # `parallel`, compiled (trainer.compile) or not
    data: Any  # nmt.data.pipeline's prepared data: train batches, valid and test pairs, tokenizer
    optimizer: Any
    schedule: Any  # nmt.training.schedules
    scaler: Any  # torch.amp.GradScaler (enabled for fp16)
    translator: Any  # the validation's search over `model`
    make_translator: Callable  # model -> a Translator (averaged checkpoints, the test set)
    validation: Any  # nmt.training.validation.ValidationSet
    loss_weights: Any  # nmt.core.loss.LossWeights: label smoothing, coverage, guided alignment
    guided_alignment: Any  # nmt.training.guided_alignment.GuidedAlignmentLoss: which attention it supervises
    speedups: Any  # nmt.speedups.choice.Speedups: what is on
    dist: Any  # nmt.training.distributed.Distributed: one process or this rank
    checkpoint_info: dict  # what every checkpoint carries beside the weights (config, tokenizer, ...)
    reporter: Any  # nmt.training.reporting.Reporter: metrics.jsonl, TensorBoard, summary.json
    run_dir: Path
    graphed: Any = None  # trainer.cuda_graphs: a GraphedUpdate that replaces the core's step
