"""scripts/benchmarks/gpu_check.py on the CPU with its tiny setting: every stage runs and
is recorded, so the one command a GPU window gets cannot rot before a GPU comes."""

import json
import tempfile
from argparse import Namespace
from pathlib import Path

import pytest
import torch

from nmt.base.errors import NmtError
from nmt.models.build import check_model_config
from nmt.training.config_checks import check_cuda_graphs
from scripts.benchmarks import gpu_check
from scripts.benchmarks.gpu_flops import epoch_flops
from tests.helpers import MULTI30K, make_config, run_cli, train


def test_gpu_check_runs_every_stage_on_the_cpu(tmp_path):
    def scratch_folders():
        return {p for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith("gpu_check_")}

    before = scratch_folders()              # only this test's gpu_check reaches the stages that make them
    done = run_cli("scripts.benchmarks.gpu_check", "--tiny", "--device", "cpu", "--out", str(tmp_path),
                   "--quality-minutes", "4", "--target-bleu", "5", timeout=300)   # stopped at the target: seconds when idle
    assert done.returncode == 0, done.stdout.decode()[-3000:] + done.stderr.decode()[-3000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["environment"]["device"] == "cpu"
    assert report["tests"]["exit"] == 0 and "skipped" in report["tests"]["summary"]   # no GPU here
    assert [row["precision"] for row in report["train_speed"]] == ["fp32", "bf16"]
    assert all(row["tgt_tokens_per_s"] > 0 and row["updates"] == 4 and row["model_tflops_per_s"] > 0
               for row in report["train_speed"])
    quality = report["time_to_quality"]
    assert quality["reached"]["bleu"] >= 5 and quality["exit"] == 130          # stopped by SIGINT at the target
    assert "trainer.max_steps=100000 trainer.precision=fp32 trainer.device=cpu" in quality["command"]  # the default
                                                                                   # --quality-overrides
    assert quality["test_bleu_greedy"] > 0
    assert [(r["beam"], r["batch_size"]) for r in report["decode_speed"]] == [(1, 1), (1, 60), (5, 1), (5, 60)]
    summary = (tmp_path / "gpu_check.md").read_text()
    assert "Stages that failed: none" in summary and "| beam 5 | 60 |" in summary
    assert "| quickstart fp32 | 1024 | 0 | 4 |" in summary         # batch tokens, CUDA graphs recorded, updates
    log = (tmp_path / "time_to_quality.log").read_text()             # kept beside the report, saying
    assert "nmt: stopped by SIGINT at step" in log and log.endswith("was scratch space, removed at the end)\n")
    assert scratch_folders() <= before                 # its work and training folders are removed at the end


def test_gpu_check_names_missing_data_in_one_line(tmp_path):
    done = run_cli("scripts.benchmarks.gpu_check", "--data", str(tmp_path), "--out", str(tmp_path), timeout=60)
    assert done.returncode == 1
    assert done.stderr.decode().strip().splitlines() == [
        f"gpu_check: Multi30k not found: {tmp_path} lacks train.de, train.en, val.de, val.en, "
        f"test_2016_flickr.de, test_2016_flickr.en[.gz]; copy them there or pass --data"]


def test_an_unknown_row_is_one_line(tmp_path):
    done = run_cli("scripts.benchmarks.gpu_check", "--rows", "transformer_small fp32 eager,bogus", "--out", str(tmp_path), timeout=60)
    assert done.returncode == 2 and b"Traceback" not in done.stderr
    assert done.stderr.decode().strip().splitlines()[-1].startswith("gpu_check.py: error: --rows: unknown bogus; choose from "
                                                           "transformer_small fp32 eager,")


def test_an_unknown_stage_is_one_line(tmp_path):
    done = run_cli("scripts.benchmarks.gpu_check", "--stages", "tests,bogus", "--out", str(tmp_path), timeout=60)
    assert done.returncode == 2 and b"Traceback" not in done.stderr
    assert done.stderr.decode().strip().splitlines()[-1].endswith(
        "--stages: unknown bogus; choose from environment,tests,train_speed,time_to_quality,decode_speed")


@pytest.mark.skipif(not MULTI30K.is_dir(), reason="needs ../shared/data/multi30k")
def test_every_gpu_row_is_a_config_nmt_train_accepts(tmp_path):
    rows = gpu_check.train_rows(Namespace(tiny=False), MULTI30K)
    assert [name for name, _ in rows] == [
        "transformer_small fp32 eager", "transformer_small bf16 eager", "transformer_small fp32 graphs",
        "transformer_small bf16 graphs", "transformer_small fp32 cuda_graphs", "transformer_small bf16 cuda_graphs",
        "transformer_small bf16 cuda_graphs compiled", "rnn_bahdanau fp32 eager", "rnn_bahdanau fp32 cuda_graphs",
        "transformer_base bf16 eager", "transformer_base bf16 graphs", "transformer_base bf16 cuda_graphs"]
    for name, overrides in rows:
        if "cuda_graphs" in name:      # refused on this CPU in one line; on a GPU every check passes
            with pytest.raises(NmtError, match="trainer.cuda_graphs=true needs a GPU"):
                gpu_check.compose_row(overrides, torch.device("cpu"), tmp_path)
            cfg = make_config(*overrides, f"cache_dir={tmp_path}")
            check_cuda_graphs(cfg, torch.device("cuda"), check_model_config(cfg.model, int(cfg.data.vocab_size)))
            assert cfg.data.pad_to_multiple == 8 and cfg.trainer.compile == name.endswith("compiled"), name
            continue
        cfg = gpu_check.compose_row(overrides, torch.device("cpu"), tmp_path)     # checked as nmt.train checks
        assert cfg.trainer.compile == name.endswith("graphs"), name
        if name.endswith("graphs"):
            assert (cfg.trainer.compile_mode, cfg.data.pad_to_multiple) == ("reduce-overhead", 8)
        if name.startswith("transformer_base"):
            assert (cfg.model.encoder.layers, cfg.model.decoder.d_model, cfg.model.decoder.heads,
                    cfg.model.encoder.ff_size, cfg.data.batch_tokens) == (6, 512, 8, 2048, 65536)


def test_flops_are_counted_on_samples_and_scaled_by_padded_positions(tmp_path, cache_dir):
    trainer = train(tmp_path, "experiment=quickstart", "data.n_train=64", "trainer.max_steps=1",
                    "trainer.val_max_sentences=4", "trainer.heatmap_sentences=0", "trainer.test_max_sentences=0",
                    cache_dir=cache_dir)
    batch = trainer.data.train.batches(0)[0]
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    one = epoch_flops(trainer, [batch])
    assert one > 0
    assert epoch_flops(trainer, [batch] * 5) == pytest.approx(5 * one)   # same shape: five times one
    assert all(torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())
    assert all(p.grad is None for p in trainer.model.parameters())              # nothing left for the next step


def test_the_quality_run_defaults_to_the_measured_gpu_recipe_on_a_gpu_only():
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert gpu_check.quality_overrides(Namespace(quality_overrides=None, tiny=False), cuda) == [
        "trainer.precision=bf16", "trainer.cuda_graphs=true", "data.pad_to_multiple=8", "data.batch_tokens=16384",
        "optimizer.lr=0.002", "schedule.warmup_steps=200", "trainer.val_every=240"]
    assert gpu_check.quality_overrides(Namespace(quality_overrides=None, tiny=False), cpu) == ["trainer.precision=fp32"]
    assert gpu_check.quality_overrides(Namespace(quality_overrides=None, tiny=True), cuda) == ["trainer.precision=fp32"]
    assert gpu_check.quality_overrides(Namespace(quality_overrides="a=1 b=2", tiny=False), cuda) == ["a=1", "b=2"]
