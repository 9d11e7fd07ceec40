"""trainer.speedups: `off` trains through nmt.core's plain code alone (and the toy task still
learns), `auto` names what is on in one log line, the plain and the fast update agree, and a
key that asks for a speedup under `off` is one line."""

import json
import logging

import pytest
import torch

from nmt.core.loss import label_smoothed_nll
from nmt.base.errors import NmtError
from nmt.speedups import fused_loss, scratch
from nmt.speedups.choice import Speedups
from nmt.training.build import build_trainer
from nmt.training.config_checks import check_config
from tests.helpers import make_config, run_cli, train

QUICK = ("experiment=quickstart", "trainer.val_max_sentences=100", "trainer.heatmap_sentences=0",
         "trainer.log_every=20", "trainer.test_max_sentences=0")


def test_with_every_speedup_off_the_toy_task_learns_through_the_core_alone(tmp_path, cache_dir, monkeypatch,
                                                                           caplog):
    """No speedup's code runs (the fused loss and the heap setting would fail here), the loss
    falls and the validation BLEU rises past 90."""
    def refused(*args, **kwargs):
        raise AssertionError("a speedup ran under trainer.speedups=off")

    monkeypatch.setattr(fused_loss.LabelSmoothedNLL, "apply", refused)
    monkeypatch.setattr(scratch, "keep_freed_heap", refused)
    import nmt.training.build as build
    monkeypatch.setattr(build, "keep_freed_heap", refused)
    monkeypatch.setattr(build, "start_openblas", refused)
    with caplog.at_level(logging.INFO, logger="nmt.train"):
        trainer = train(tmp_path, *QUICK, "trainer.speedups=off", "trainer.max_steps=400", "trainer.val_every=200",
                        "trainer.matmul=auto", cache_dir=cache_dir)
    assert trainer.speedups == Speedups() and trainer.token_losses is label_smoothed_nll
    assert "speedups: none (trainer.speedups=off); the update is nmt.core's plain loss and step" in caplog.messages
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in records if "bleu" in r]
    assert len(losses) == 2 and losses[1] < losses[0] < 2.0, losses
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["bleu"] > 90, summary


def test_auto_names_what_is_on_in_one_line(tmp_path, cache_dir, caplog):
    cfg = make_config(*QUICK, "trainer.device=cpu", cache_dir=cache_dir)
    check_config(cfg)
    with caplog.at_level(logging.INFO, logger="nmt.train"):
        trainer = build_trainer(cfg, tmp_path)
    lines = [m for m in caplog.messages if m.startswith("speedups")]
    kept_heap = trainer.speedups.kept_heap            # glibc's: True on Linux with glibc
    assert lines == ["speedups (trainer.speedups=auto): fused loss, kept scratch memory, "
                     + ("glibc keeps freed heap memory, " if kept_heap else "")
                     + "model speedups (dropout mask, padded RNN runs)"]
    assert trainer.token_losses.func is fused_loss.fused_label_smoothed_nll


def test_the_plain_update_and_the_fast_one_agree(tmp_path, cache_dir):
    """Three updates from the same weights, one trainer with trainer.speedups=off, one with
    auto (the fused loss, kept memory): the same losses, gradient norms and weights, to float
    rounding (the fused loss sums in another order)."""
    common = (*QUICK, "trainer.device=cpu", "model.encoder.dropout=0", "model.decoder.dropout=0")
    plain, fast = (build_trainer(make_config(*common, f"trainer.speedups={s}", cache_dir=cache_dir), tmp_path / s)
                   for s in ("off", "auto"))
    fast.model.load_state_dict(plain.model.state_dict())
    for batch in plain.data.train.batches(0)[:3]:
        expected, got = plain.train_update([batch]), fast.train_update([batch])
        assert got["loss"] == pytest.approx(expected["loss"], rel=1e-5)
        assert got["nll"] == pytest.approx(expected["nll"], rel=1e-5)
        assert got["grad_norm"] == pytest.approx(expected["grad_norm"], rel=1e-4)
    for (name, a), b in zip(plain.model.named_parameters(), fast.model.parameters()):
        # Adam divides each gradient element by its own running RMS, so a rounding-level
        # difference in a near-zero element is magnified in its weight (2.5e-6 of a 0.13 weight
        # seen on an AVX-512 CPU); a wrong gradient would move weights by up to the rate itself (3e-3 here).
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)


@pytest.mark.parametrize("key", ["trainer.matmul=openblas", "trainer.compile=true", "trainer.cuda_graphs=true"])
def test_off_refuses_a_key_that_asks_for_a_speedup(cache_dir, key):
    cfg = make_config("experiment=quickstart", "trainer.speedups=off", key, "trainer.device=cpu", cache_dir=cache_dir)
    with pytest.raises(NmtError, match=f"^trainer.speedups=off turns every speedup off, but {key} asks for one; "
                                       f"drop {key} or use trainer.speedups=auto$"):
        check_config(cfg)


def test_the_command_says_it_in_one_line(tmp_path, cache_dir):
    done = run_cli("nmt.train", "experiment=quickstart", "trainer.speedups=off", "trainer.compile=true",
                   f"cache_dir={cache_dir}", f"hydra.run.dir={tmp_path / 'run'}")
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "nmt: error: trainer.speedups=off turns every speedup off, but trainer.compile=true asks for one; "
        "drop trainer.compile=true or use trainer.speedups=auto"]
