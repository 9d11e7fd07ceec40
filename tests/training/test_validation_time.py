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


def test_the_end_of_a_run_fits_in_its_budget_without_an_earlier_validation(tmp_path, cache_dir, one_thread,
                                                                          caplog):
    """No validation before the budget ends (val_every past it), 600 validation and
    600 test sentences that an untrained model decodes to the length limit (tens of
    seconds): the end is scored on as many sentences as fit, says so, and the run
    ends within its 6 seconds and one heatmap card, which is always drawn."""
    trainer = build(tmp_path, cache_dir, "trainer.max_steps=1000000", "trainer.max_minutes=0.1",
                    "trainer.val_every=1000000", "trainer.heatmap_sentences=1", "data.n_valid=600",
                    "data.n_test=600")
    started = time.perf_counter()
    with caplog.at_level("INFO", logger="nmt.train"):
        trainer.fit()
    took = time.perf_counter() - started
    assert trainer.summary["stopped_by"] == "trainer.max_minutes"
    assert trainer.progress.last_validated == trainer.progress.step    # a final validation ran
    assert took < 6.0 + trainer.reporter.drawer.card_seconds + 0.5, took
    assert trainer.summary["wall_s"] < 6.0 + trainer.reporter.drawer.card_seconds + 0.5
    valid, test = trainer.final_metrics["valid_sentences"], trainer.summary["test_sentences"]
    assert 20 <= valid < 600 and 20 <= test < 600
    assert f"the final validation scores {valid} of 600 sentences and the test set {test} of 600" in caplog.text
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"images": 0})
    events.Reload()
    assert "attention/sentence_1/layer_1" in events.Tags()["images"]   # at least one heatmap, always


def test_the_end_of_a_run_is_estimated_from_the_last_validation():
    """valid 100 sentences, test 50, one averaged checkpoint validated, a 100 s budget:
    the last validation took 10 s, so 0.1 s a sentence; the end costs
    1.15 * (10 * 2 + 0.1 * 50) = 28.75 s, more than the 20 s (a fifth) kept back,
    so it scores 20 / 28.75 = 0.696 of each set: 69 of 100, 34 of 50, 7 of 10 batches."""
    from nmt.training.final_cost import FinalCost
    from nmt.training.validation import ValidationSet

    cost = FinalCost(valid_sentences=100, test_sentences=50, extra_validations=1, budget_seconds=100.0)
    assert cost.seconds() == 0.0 and cost.probe_due(0.0)
    cost.probe(lambda sources: time.sleep(0.01 * len(sources)), ["a"] * 4, spent=0.0)
    assert 0.01 <= cost.probe_per_sentence < 0.05 and not cost.probe_due(0.15) and cost.probe_due(0.2)
    cost.validation_seconds = 10.0
    assert not cost.probe_due(0.5)                          # a validation measures it from now on
    assert abs(cost.seconds() - 28.75) < 1e-9 and cost.reserve() == 20.0
    validation = ValidationSet(pairs=[(f"s{i}", f"t{i}") for i in range(100)], batches=list(range(10)),
                               heatmap_pairs=[("s0", "t0")])
    trimmed, test = cost.fit_in_budget(validation, [(f"s{i}", f"t{i}") for i in range(50)])
    assert len(trimmed.pairs) == 69 and len(test) == 34 and trimmed.batches == list(range(7))
    assert trimmed.pairs[0] == ("s0", "t0") and trimmed.heatmap_pairs == validation.heatmap_pairs
    roomy = FinalCost(valid_sentences=100, test_sentences=50, extra_validations=1, budget_seconds=1000.0)
    roomy.validation_seconds = 10.0
    assert roomy.fit_in_budget(validation, test) == (validation, test)    # it fits: everything is scored


def test_the_bar_says_when_it_validates_and_draws_attention(tmp_path, cache_dir, one_thread, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    trainer = build(tmp_path, cache_dir, "trainer.max_steps=2", "trainer.val_every=2",
                    "trainer.val_max_sentences=2", "trainer.heatmap_sentences=1")
    trainer.fit()
    shown = terminal.getvalue()
    for what in ("train:", "validating:", "drawing attention:", "scoring the test set:", "loss=", "tok_s="):
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
