"""From the checked config to a Trainer: the one place that reads the config
for training. It resolves the device and precision, starts the ranks, seeds,
prepares the data, builds the model, optimiser, schedule and losses, chooses
the speedups (trainer.speedups), and hands them (TrainerParts) with a typed
TrainSettings to the loop's `Trainer`.

    check_config(cfg)                         # nmt.training.config_checks
    trainer = build_trainer(cfg, run_dir)
    code = trainer.fit()
"""

import logging
from dataclasses import replace
from pathlib import Path

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from nmt.data.batching import TokenBatcher
from nmt.data.pipeline import prepare_data
from nmt.base.device import resolve_device
from nmt.base.errors import NmtError
from nmt.core.loss import LossWeights
from nmt.models.build import build_model
from nmt.speedups.eager_loop import keep_loop_eager
from nmt.speedups.choice import Speedups, choose_speedups
from nmt.speedups.compile import compiled
from nmt.speedups.graphed_update import GraphedUpdate
from nmt.speedups.openblas_linear import resolve_matmul, start_openblas
from nmt.speedups.scratch import keep_freed_heap
from nmt.store.checkpoints import data_fingerprint
from nmt.training.distributed import Distributed
from nmt.training.guided_alignment import GuidedAlignmentLoss
from nmt.training.loop import Trainer
from nmt.training.precision import autocast, resolve_precision
from nmt.training.progress import seed_everything
from nmt.training.reporting import Reporter
from nmt.training.settings import TrainerParts, TrainSettings
from nmt.training.validation import ValidationSet
from nmt.translator import Translator, length_limits

log = logging.getLogger("nmt.train")


def start_speedups(tc: DictConfig, model, device, precision: str, vocab_size: int) -> Speedups:
    """trainer.speedups: what is on, the CPU-side ones started (glibc's heap kept, the
    nn.Linear products on OpenBLAS with the output layer's logits in kept memory), and the
    one log line that names them."""
    off = tc.speedups == "off"
    matmul = "torch" if off else resolve_matmul(str(tc.matmul), device, precision, bool(tc.compile))
    speedups = choose_speedups(str(tc.speedups), device, matmul, bool(tc.compile), bool(tc.cuda_graphs))
    if speedups.kept_heap:  # no page faults for the memory every update frees and takes again
        speedups = replace(speedups, kept_heap=keep_freed_heap())  # False where the C library is not glibc
    if speedups.openblas:
        start_openblas(model, vocab_size)
    log.info(speedups.log_line(str(tc.speedups)))
    return speedups


def build_trainer(cfg: DictConfig, run_dir: Path) -> Trainer:
    tc = cfg.trainer
    device = resolve_device(tc.device)
    precision = resolve_precision(str(tc.precision), device)  # auto decided for this machine
    if precision == "fp16" and device.type != "cuda":
        raise NmtError("trainer.precision=fp16 needs a GPU; use fp32 or bf16 on CPU")
    settings = TrainSettings.from_config(tc, precision)
    dist = Distributed.start(device, float(tc.peer_timeout_s))  # one process, or this rank under torchrun
    run_dir = Path(dist.broadcast_object(str(run_dir)))  # rank 0's folder
    if settings.cuda_graphs and dist.enabled:
        raise NmtError("trainer.cuda_graphs=true records one process's update; under torchrun train without it")
    seed_everything(settings.seed)

    with dist.main_first():  # rank 0 trains and caches the vocabulary
        data = prepare_data(cfg.data, Path(cfg.cache_dir), settings.seed)
    tokenizer = data.tokenizer
    model = build_model(
        cfg.model, tokenizer.src_vocab_size, tokenizer.tgt_vocab_size, speedups=tc.speedups != "off"
    ).to(dist.device)  # the model's speedups follow the switch
    speedups = start_speedups(tc, model, dist.device, precision, tokenizer.tgt_vocab_size)
    parallel = dist.wrap(model)  # DistributedDataParallel under torchrun
    if settings.compile:
        keep_loop_eager()  # an RNN decoder's teacher-forced loop stays eager
    forward = compiled(parallel, settings.compile_mode) if settings.compile else parallel
    optimizer = instantiate(cfg.optimizer)(params=model.parameters())
    schedule = instantiate(cfg.schedule)(optimizer=optimizer)
    scaler = torch.amp.GradScaler("cuda", enabled=precision == "fp16")
    limits = length_limits(cfg)

    def make_translator(m):
        return Translator(m, tokenizer, dist.device, **limits)

    validation = validation_set(cfg, data)
    weights, guided = attention_losses(cfg, model, data)
    parts = TrainerParts(
        model=model,
        parallel=parallel,
        forward=forward,
        data=data,
        optimizer=optimizer,
        schedule=schedule,
        scaler=scaler,
        translator=make_translator(model),
        make_translator=make_translator,
        validation=validation,
        loss_weights=weights,
        guided_alignment=guided,
        speedups=speedups,
        dist=dist,
        checkpoint_info=checkpoint_info(cfg, tokenizer, validation),
        reporter=Reporter(run_dir, hparams(cfg), enabled=dist.is_main),
        run_dir=run_dir,
    )
    if speedups.cuda_graphs:  # each batch shape's update recorded once, then replayed
        parts.graphed = GraphedUpdate(
            model, graph_forward(forward, dist.device, precision), optimizer, schedule, settings, dist.device
        )
    return Trainer(parts, settings)


def graph_forward(forward, device, precision: str):
    """`forward(src, tgt_in)` under the run's autocast without its cast cache, which would
    outlive a CUDA graph's capture."""

    def run(src, tgt_in):
        with autocast(device, precision, cache=False):
            return forward(src, tgt_in)

    return run


def checkpoint_info(cfg: DictConfig, tokenizer, validation: ValidationSet) -> dict:
    """What every checkpoint carries beside the weights."""
    return {
        "config": OmegaConf.to_container(cfg, resolve=True),
        "tokenizer": tokenizer.to_bytes(),
        "fingerprint": data_fingerprint(cfg.data, tokenizer.to_bytes()),  # checked on resume
        "samples": [src for src, _ in validation.pairs[:20]],  # for the explorer
        "sample_references": [tgt for _, tgt in validation.pairs[:20]],  # shown beside a picked sample
    }


def attention_losses(cfg: DictConfig, model, data) -> tuple[LossWeights, GuidedAlignmentLoss]:
    """The loss's weights: label smoothing, the coverage loss (model.attention.coverage_loss_weight,
    coverage attention only) and guided alignment (trainer.guided_alignment, with the attention
    it supervises); their values were checked by nmt.config_schema."""
    coverage = 0.0
    if getattr(model.decoder, "coverage", False):
        coverage = float(cfg.model.attention.coverage_loss_weight)
    guided = cfg.trainer.guided_alignment
    guided_alignment = GuidedAlignmentLoss(float(guided.weight), guided.layer, guided.head)
    if guided_alignment.weight:
        if getattr(data.train, "guides", None) is None:
            raise NmtError(
                "trainer.guided_alignment.weight > 0 needs data.train_alignments, a file of "
                "word links 'i-j' per training pair (python -m nmt.data.alignments toy "
                "FILE writes the toy task's)"
            )
        guided_alignment.check(model.decoder)
    weights = LossWeights(float(cfg.trainer.label_smoothing), coverage, guided_alignment.weight)
    return weights, guided_alignment


def validation_set(cfg: DictConfig, data) -> ValidationSet:
    """trainer.val_max_sentences of the validation pairs, batched as training batches are."""
    tc, tokenizer = cfg.trainer, data.tokenizer
    valid = data.valid[: int(tc.val_max_sentences)] if tc.val_max_sentences else data.valid
    batches = TokenBatcher(
        [(tokenizer.encode_src(s), tokenizer.encode_tgt(t)) for s, t in valid],
        int(cfg.data.batch_tokens),
        shuffle=False,
        seed=0,
        pad_to_multiple=int(cfg.data.pad_to_multiple),
    ).batches(0)
    return ValidationSet(
        valid, batches, valid[: int(tc.heatmap_sentences)], int(tc.val_beam_size), float(tc.coverage_penalty)
    )


def hparams(cfg: DictConfig) -> dict:
    """The run's choices for TensorBoard's HPARAMS tab."""
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
