"""Mistakes the training config alone reveals, found before any data is read
and before the run folder is written: the one place that checks it, for
`python -m nmt.train` and for `build_trainer` callers alike.

The settings and the files they name are checked before torch is imported
(a wrong path answers in a second); the model's checks import it."""

import logging
import os
from pathlib import Path

from omegaconf import DictConfig

from nmt.base.cli_checks import check_checkpoint_exists
from nmt.config_schema import check_classes, validate
from nmt.base.errors import NmtError


def check_config(cfg: DictConfig, choices: dict | None = None) -> None:
    """Mistakes the config alone reveals, found before any data is read: every
    rule of nmt.config_schema (values, lengths and data, the files the config
    names, then the settings each class takes and the model's combinations),
    the model built on the meta device, and the trainer settings that depend
    on it. `choices` is Hydra's runtime.choices, to name options in messages."""
    validate(cfg)
    check_paths(cfg)  # a file that is not there: said before torch is imported
    check_classes(cfg, choices)
    from nmt.models.build import check_model_config
    from nmt.base.folders import make_folder

    model = check_model_config(cfg.model, int(cfg.data.vocab_size))
    check_training_settings(cfg, model)
    from nmt.decoding.search_bounds import check_model_memory
    from nmt.base.device import resolve_device

    check_model_memory(model, resolve_device(str(cfg.trainer.device)))  # 10^6 hidden units: not an OOM kill
    make_folder(cfg.cache_dir, "cache_dir")  # last: only a run that passed makes it


def check_training_settings(cfg: DictConfig, model) -> None:
    """trainer settings that only work with others: the device, fp16, the
    coverage penalty's beam, guided alignment's links, layer and head (checked
    against `model`, built on the meta device)."""
    from nmt.decoding.limits import MAX_LEN_EXTRA, MAX_LEN_RATIO, check_search_limits
    from nmt.base.device import resolve_device
    from nmt.speedups.choice import check_speedups
    from nmt.training.guided_alignment import GuidedAlignmentLoss
    from nmt.translator import check_coverage_penalty, length_limits

    tc = cfg.trainer
    check_speedups(tc)  # trainer.speedups=off with a key that asks for a speedup
    device = resolve_device(str(tc.device))
    if tc.precision == "fp16" and device.type != "cuda":
        raise NmtError("trainer.precision=fp16 needs a GPU; use fp32 or bf16 on CPU")
    if tc.compile_mode != "default" and not tc.compile:
        raise NmtError(f"trainer.compile_mode={tc.compile_mode} is torch.compile's mode; add trainer.compile=true")
    if tc.cuda_graphs:
        check_cuda_graphs(cfg, device, model)
    if tc.matmul == "openblas":  # one line now, not after the data is read
        from nmt.speedups.openblas_linear import resolve_matmul
        from nmt.training.precision import resolve_precision

        resolve_matmul("openblas", device, resolve_precision(str(tc.precision), device), bool(tc.compile))
    limits = length_limits(cfg)  # the validation search's, as the trainer builds its Translator
    check_search_limits(limits["max_src_len"], MAX_LEN_RATIO, MAX_LEN_EXTRA, limits["max_tgt_len"])
    check_coverage_penalty(
        float(tc.coverage_penalty), int(tc.val_beam_size), "trainer.coverage_penalty=", "trainer.val_beam_size"
    )
    guided = tc.guided_alignment
    if guided.weight:
        guided_alignment = GuidedAlignmentLoss(float(guided.weight), guided.layer, guided.head)
        guided_alignment.check_links(bool(cfg.data.train_alignments))
        guided_alignment.check(model.decoder)


def check_cuda_graphs(cfg: DictConfig, device, model) -> None:
    """trainer.cuda_graphs=true records one batch's forward, loss, backward and clipping
    on a GPU (nmt.speedups.graphed_update): what cannot be recorded is refused here, but
    torchrun, which build_trainer refuses once the ranks have started."""
    tc = cfg.trainer
    cannot = [
        (device.type != "cuda", f"needs a GPU (trainer.device={tc.device} is {device.type})"),
        (tc.precision == "fp16", "takes fp32 or bf16 (fp16's loss scaler reads the host each update)"),
        (int(tc.accumulate) > 1, "records one batch an update; set trainer.accumulate=1"),
        (
            tc.compile and tc.compile_mode != "default",
            f"records the graphs itself; trainer.compile_mode={tc.compile_mode} would record them again",
        ),
        (
            bool(tc.guided_alignment.weight),
            "cannot record guided alignment's loss; set trainer.guided_alignment.weight=0",
        ),
        (
            bool(getattr(model.decoder, "coverage", False) and cfg.model.attention.get("coverage_loss_weight")),
            "cannot record the coverage loss; set model.attention.coverage_loss_weight=0",
        ),
        (cfg.model.attention.get("scope") == "hard", "cannot record hard attention's sampled update"),
    ]
    for refused, why in cannot:
        if refused:
            raise NmtError(f"trainer.cuda_graphs=true {why}; or train without trainer.cuda_graphs")
    if int(cfg.data.pad_to_multiple) == 1:  # allowed, but each new (B, S, T) is one more graph held on the GPU
        logging.getLogger("nmt.train").warning(
            "trainer.cuda_graphs=true with data.pad_to_multiple=1 records a graph for nearly every batch "
            "shape; data.pad_to_multiple=8 keeps them few"
        )


DATA_FILES = ("train_src", "train_tgt", "valid_src", "valid_tgt", "test_src", "test_tgt", "train_alignments")


def _set(value) -> bool:
    return value is not None and str(value) not in ("", "???", "null")


def check_pair_lengths(data) -> None:
    """The parallel files of data=files: none empty, each pair of one length (a
    buffer at a time, before torch is imported; the reader checks the same again)."""
    from nmt.data.readers import check_parallel_counts, count_lines

    for side in ("train", "valid", "test"):
        src, tgt = data.get(f"{side}_src"), data.get(f"{side}_tgt")
        if _set(src) and _set(tgt):
            check_parallel_counts(src, count_lines(str(src)), tgt, count_lines(str(tgt)))


def check_paths(cfg: DictConfig) -> None:
    """Files the config names that are not there, before torch is imported:
    trainer.resume=PATH (naming the checkpoints its folder holds), the data
    files of data=files, and Multi30k's data.path."""
    resume = cfg.trainer.get("resume")
    if _set(resume) and resume is not False and str(resume) != "auto":
        check_checkpoint_exists(str(resume), f"trainer.resume={resume}: no such checkpoint file")
    data = cfg.data
    if data.get("kind") == "files":
        for key in DATA_FILES:
            path = data.get(key)
            if _set(path) and not os.path.lexists(str(path)):  # a link loop: said by the reader
                raise NmtError(f"{path}: no such file; check the data paths in the config (data.{key})")
        check_pair_lengths(data)
    if data.get("kind") == "multi30k" and _set(data.get("path")) and not Path(str(data.path)).is_dir():
        raise NmtError(
            f"data.path={data.path}: no such folder; give the folder of the Multi30k files "
            "(train.de, val.de, test_2016_flickr.de, ...; `nmt-data multi30k data/multi30k` makes one), "
            "or data.path=null for the hub copy"
        )
