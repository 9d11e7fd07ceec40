"""Validation does not stall the run: heatmaps are drawn beside training and
count in trainer.max_minutes; the bar (on a terminal only) says what the run
is doing; tokens_per_s is wall time per window."""

import io
import json
import time
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.helpers import make_config, one_thread  # noqa: F401 (fixture)

TINY = [f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
        for key, value in (("d_model", 16), ("layers", 2), ("heads", 2), ("ff_size", 32))]
TRANSFORMER = ("data=toy", "model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
               "model/positional=sinusoidal", *TINY, "trainer.device=cpu", "trainer.keep_last=0")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def build(run_dir, cache_dir, *overrides):
    from nmt.training.build import build_trainer
    from nmt.training.config_checks import check_config

    cfg = make_config(*TRANSFORMER, *overrides, cache_dir=cache_dir)
    check_config(cfg)
    return build_trainer(cfg, Path(run_dir))


def test_heatmaps_count_in_the_time_budget(tmp_path, cache_dir, one_thread):
    """6 cards a validation (2 layers: head mean and 2 heads), seconds to draw for
    an untrained model's long outputs: the run still ends within its 6 seconds
    (and the time of one card, the most a card started in time can overrun)."""
    trainer = build(tmp_path, cache_dir, "trainer.max_steps=1000000", "trainer.max_minutes=0.1",
                    "trainer.val_every=10", "trainer.val_max_sentences=4", "trainer.heatmap_sentences=1",
                    "trainer.test_max_sentences=0")              # the test set is scored after the budget
    started = time.perf_counter()
    trainer.fit()
    took = time.perf_counter() - started
    assert trainer.summary["stopped_by"] == "trainer.max_minutes"
    assert trainer.progress.last_validated == trainer.progress.step    # a final validation ran
    assert took < 6.0 + trainer.reporter.drawer.card_seconds + 0.5, took
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"images": 0})
    events.Reload()
    assert "attention/sentence_1/layer_1" in events.Tags()["images"]


def test_the_bar_says_when_it_validates_and_draws_attention(tmp_path, cache_dir, one_thread, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    trainer = build(tmp_path, cache_dir, "trainer.max_steps=2", "trainer.val_every=2",
                    "trainer.val_max_sentences=2", "trainer.heatmap_sentences=1")
    trainer.fit()
    shown = terminal.getvalue()
    for what in ("train:", "validating:", "drawing attention:", "loss=", "tok_s="):
        assert what in shown, shown


def test_without_a_terminal_there_is_no_bar(tmp_path, cache_dir, one_thread, monkeypatch):
    redirected = io.StringIO()                                          # `> log.txt`: not a tty
    monkeypatch.setattr("sys.stderr", redirected)
    build(tmp_path, cache_dir, "trainer.max_steps=2", "trainer.val_every=2", "trainer.val_max_sentences=2",
          "trainer.heatmap_sentences=1").fit()
    assert redirected.getvalue() == ""


def test_the_eta_runs_to_the_steps_the_time_budget_leaves():
    from nmt.training.display import Display

    terminal = Terminal()
    display = Display(max_steps=1000, step=0, main=True, stream=terminal)
    display.update(10, spent=0.25, loss=1.0, lr=1e-3, speed=100.0)     # 10 steps used a quarter: 40 in all
    assert display.bar.total == 40
    display.update(11, spent=0.0, loss=1.0, lr=1e-3, speed=100.0)      # no budget: max_steps
    assert display.bar.total == 40 and display.bar.n == 11
    display.close()


def test_tokens_per_s_counts_wall_time_with_loading_the_batches(tmp_path, cache_dir, one_thread):
    """Each batch takes 0.2 s to load: 4 updates take over 0.8 s of wall time, so the
    speed of metrics.jsonl and TensorBoard is at most the tokens over 0.8 s."""
    trainer = build(tmp_path, cache_dir, "trainer.max_steps=4", "trainer.val_every=4", "trainer.log_every=4",
                    "trainer.val_max_sentences=2", "trainer.heatmap_sentences=0")
    batches = trainer.data.train.batches

    def slow(*args):
        for batch in batches(*args):
            time.sleep(0.2)
            yield batch

    trainer.data.train.batches = slow
    trainer.fit()
    (record,) = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert 0 < record["tokens_per_s"] <= trainer.progress.tokens_total / 0.8
    assert trainer.summary["tokens_per_s"] <= trainer.progress.tokens_total / 0.8
