"""From the checked config to a Trainer: the one place that reads the config
for training. It resolves the device and precision, starts the ranks, seeds,
prepares the data, builds the model, optimiser, schedule and losses, and
hands them with a typed TrainSettings to `Trainer`.

    check_config(cfg)                         # nmt.training.config_checks
    trainer = build_trainer(cfg, run_dir)
    code = trainer.fit()
"""

from pathlib import Path

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from nmt.data.batching import TokenBatcher
from nmt.data.pipeline import prepare_data
from nmt.device import resolve_device
from nmt.errors import NmtError
from nmt.models.build import build_model
from nmt.models.decoders.rnn import keep_loop_eager
from nmt.store.checkpoints import data_fingerprint
from nmt.training.coverage_loss import CoverageLoss
from nmt.training.distributed import Distributed
from nmt.training.graphed_update import GraphedUpdate
from nmt.training.guided_alignment import GuidedAlignmentLoss
from nmt.training.openblas_linear import resolve_matmul, start_openblas
from nmt.training.precision import resolve_precision
from nmt.training.progress import seed_everything
from nmt.training.reporting import Reporter
from nmt.training.scratch import keep_freed_heap
from nmt.training.settings import TrainSettings
from nmt.training.trainer import Trainer
from nmt.training.validation import ValidationSet
from nmt.translator import Translator, length_limits


def prepare_cpu_updates(model, matmul: str, device, precision: str, compiled: bool, vocab_size: int) -> None:
    """On a CPU, the heap memory an update frees is kept for the next; trainer.matmul=openblas
    (or auto, where it pays) moves the nn.Linear products of training updates to OpenBLAS."""
    if device.type == "cpu":
        keep_freed_heap()  # no page faults for the memory every update frees and takes again
    if resolve_matmul(matmul, device, precision, compiled) == "openblas":
        start_openblas(model, vocab_size)  # the output layer's logits into kept memory too


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
    model = build_model(cfg.model, tokenizer.src_vocab_size, tokenizer.tgt_vocab_size).to(dist.device)
    prepare_cpu_updates(model, str(tc.matmul), dist.device, precision, settings.compile, tokenizer.tgt_vocab_size)
    parallel = dist.wrap(model)  # DistributedDataParallel under torchrun
    # Token-budget batches vary in both B and T: shapes are dynamic from the first step, so one
    # compile instead of three (static, then T dynamic, then B too); same kernels in the end.
    # reduce-overhead on CUDA records one CUDA graph per distinct batch shape and replays it.
    mode = None if settings.compile_mode == "default" else settings.compile_mode
    if settings.compile:
        keep_loop_eager()  # an RNN decoder's teacher-forced loop stays eager
    forward = torch.compile(parallel, dynamic=True, mode=mode) if settings.compile else parallel
    optimizer = instantiate(cfg.optimizer)(params=model.parameters())
    schedule = instantiate(cfg.schedule)(optimizer=optimizer)
    scaler = torch.amp.GradScaler("cuda", enabled=precision == "fp16")
    limits = length_limits(cfg)

    def make_translator(m):
        return Translator(m, tokenizer, dist.device, **limits)

    translator = make_translator(model)
    losses = attention_losses(cfg, model, data)
    validation = validation_set(cfg, data)
    reporter = Reporter(run_dir, hparams(cfg), enabled=dist.is_main)
    trainer = Trainer(
        model,
        parallel,
        forward,
        data,
        optimizer,
        schedule,
        scaler,
        translator,
        make_translator,
        validation,
        losses,
        dist,
        settings,
        run_dir,
        checkpoint_info(cfg, tokenizer, validation),
        reporter,
    )
    if settings.cuda_graphs:  # each batch shape's update recorded once, then replayed
        trainer.graphed = GraphedUpdate(model, forward, optimizer, schedule, settings, dist.device)
    return trainer


def checkpoint_info(cfg: DictConfig, tokenizer, validation: ValidationSet) -> dict:
    """What every checkpoint carries beside the weights."""
    return {
        "config": OmegaConf.to_container(cfg, resolve=True),
        "tokenizer": tokenizer.to_bytes(),
        "fingerprint": data_fingerprint(cfg.data, tokenizer.to_bytes()),  # checked on resume
        "samples": [src for src, _ in validation.pairs[:20]],  # for the explorer
        "sample_references": [tgt for _, tgt in validation.pairs[:20]],  # shown beside a picked sample
    }


def attention_losses(cfg: DictConfig, model, data) -> tuple[CoverageLoss, GuidedAlignmentLoss]:
    """The coverage loss (model.attention.coverage_loss_weight, coverage
    attention only) and guided alignment (trainer.guided_alignment); their
    weights were checked by nmt.config_schema."""
    coverage = CoverageLoss()
    if getattr(model.decoder, "coverage", False):
        coverage = CoverageLoss(float(cfg.model.attention.coverage_loss_weight))
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
    return coverage, guided_alignment


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
