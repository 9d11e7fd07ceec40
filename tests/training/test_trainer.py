"""The trainer on the toy task: it learns, resumes exactly, logs what it says."""

import json

import pytest
import torch

from tests.helpers import train

FAST = ("experiment=quickstart", "trainer.val_max_sentences=20", "trainer.heatmap_sentences=1",
        "trainer.log_every=5")


def test_rnn_learns_the_toy_task(tmp_path, cache_dir):
    trainer = train(tmp_path, *FAST, "trainer.max_steps=400", "trainer.val_every=200",
                    "trainer.val_max_sentences=100", cache_dir=cache_dir)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["bleu"] > 90, summary
    assert trainer.final_metrics["bleu"] == summary["bleu"]


def test_transformer_learns_the_toy_task(tmp_path, cache_dir):
    tiny = [f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
            for key, value in (("d_model", 64), ("layers", 2), ("heads", 4), ("ff_size", 128),
                               ("dropout", 0.0))]
    train(tmp_path, "data=toy", *FAST[1:], "model/encoder=transformer", "model/decoder=transformer",
          "model/bridge=zero", "model/positional=sinusoidal", "schedule=inverse_sqrt",
          "schedule.warmup_steps=100", "optimizer.lr=0.003", *tiny, "trainer.max_steps=500",
          "trainer.val_every=250", "trainer.val_max_sentences=100", cache_dir=cache_dir)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["bleu"] > 90, summary
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"images": 0})
    events.Reload()
    # every cross-attention layer: the mean of its heads, and each head on a card of its own
    assert sorted(events.Tags()["images"]) == ["attention/sentence_1/layer_1",
                                               "attention/sentence_1/layer_2"] + [
        f"per_head_attention/sentence_1/layer_{layer}/head_{head}" for layer in (1, 2) for head in (1, 2, 3, 4)]


def test_resume_continues_exactly(tmp_path, cache_dir):
    """2N steps straight equals N steps, a resume, then N more (to 1e-5)."""
    common = (*FAST, "model.encoder.dropout=0.3", "model.decoder.dropout=0.3", "trainer.val_every=10",
              "trainer.keep_last=0")
    straight = train(tmp_path / "straight", *common, "trainer.max_steps=20", cache_dir=cache_dir)
    train(tmp_path / "split", *common, "trainer.max_steps=10", cache_dir=cache_dir)
    resumed = train(tmp_path / "split", *common, "trainer.max_steps=20", "trainer.resume=auto",
                    cache_dir=cache_dir)
    assert resumed.step == straight.step == 20
    a = [json.loads(line) for line in (tmp_path / "straight" / "metrics.jsonl").read_text().splitlines()]
    b = [json.loads(line) for line in (tmp_path / "split" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in a] == [r["step"] for r in b] == [10, 20]
    for x, y in zip(a, b):
        assert x["loss"] == pytest.approx(y["loss"], abs=1e-5)
    for name, value in straight.model.state_dict().items():
        assert torch.allclose(value, resumed.model.state_dict()[name], atol=1e-5), name


def test_time_budget_counts_the_whole_run_across_a_resume(tmp_path, cache_dir):
    """trainer.max_minutes is the run's wall clock, resumptions added up: a checkpoint keeps the
    seconds spent so far, and a resumed run whose budget is used up trains no further."""
    from nmt.store.checkpoints import load_checkpoint, save_checkpoint

    common = (*FAST, "trainer.val_every=5", "trainer.keep_last=0")
    first = train(tmp_path, *common, "trainer.max_steps=5", cache_dir=cache_dir)
    last = tmp_path / "checkpoints" / "last.pt"
    state = load_checkpoint(last)
    spent = state["progress"]["wall_seconds"]
    assert 0 < spent <= first.harness.budget.wall_seconds()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["wall_s"] >= spent

    state["progress"]["wall_seconds"] = 90.0          # as if the first part had run 1.5 minutes
    save_checkpoint(state, last)
    resumed = train(tmp_path, *common, "trainer.max_steps=10", "trainer.max_minutes=1", "trainer.resume=auto",
                    cache_dir=cache_dir)
    assert resumed.step == 5                           # no update: the 1 minute was spent before
    assert json.loads((tmp_path / "summary.json").read_text())["wall_s"] >= 90.0

    resumed = train(tmp_path, *common, "trainer.max_steps=10", "trainer.max_minutes=2", "trainer.resume=auto",
                    cache_dir=cache_dir)
    assert resumed.step == 10                          # 30 seconds were left: enough for 5 tiny updates
    assert load_checkpoint(last)["progress"]["wall_seconds"] > 90.0


def test_run_folder_outputs(tmp_path, cache_dir):
    train(tmp_path, *FAST, "trainer.max_steps=6", "trainer.val_every=3", "trainer.keep_last=1",
          cache_dir=cache_dir)
    ckpts = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert ckpts == ["best.pt", "last.pt", "step_6.pt"]
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [3, 6]
    for key in ("step", "epoch", "loss", "perplexity", "bleu", "chrf", "lr", "tokens_per_s"):
        assert key in records[-1]
    assert records[-1]["bleu_signature"].startswith("nrefs:1")


def test_a_run_always_ends_with_a_validation(tmp_path, cache_dir):
    train(tmp_path, *FAST, "trainer.max_steps=4", "trainer.val_every=1000", cache_dir=cache_dir)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [4]


def test_second_fresh_run_in_the_same_folder_refuses(tmp_path, cache_dir):
    from nmt.base.errors import NmtError

    train(tmp_path, *FAST, "trainer.max_steps=2", cache_dir=cache_dir)
    before = (tmp_path / "checkpoints" / "last.pt").read_bytes()
    with pytest.raises(NmtError, match="already holds a run"):
        train(tmp_path, *FAST, "trainer.max_steps=2", cache_dir=cache_dir)
    assert (tmp_path / "checkpoints" / "last.pt").read_bytes() == before


def test_event_file_has_scalars_and_images(tmp_path, cache_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from PIL import Image
    import io

    train(tmp_path, *FAST, "trainer.max_steps=5", "trainer.val_every=5", cache_dir=cache_dir)
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"images": 0})
    events.Reload()
    scalars = set(events.Tags()["scalars"])
    for tag in ("train/loss", "train/lr", "train/grad_norm", "train/tokens_per_s", "valid/loss",
                "valid/perplexity", "valid/bleu", "valid/chrf"):
        assert tag in scalars
    images = events.Tags()["images"]
    assert images == ["attention/sentence_1"]
    picture = Image.open(io.BytesIO(events.Images(images[0])[0].encoded_image_string))
    assert picture.size[0] > 200 and picture.size[1] > 150


def test_non_finite_loss_is_skipped_then_stops(tmp_path, cache_dir):
    """A learning rate of 1e38 makes the loss infinite after the first update (at 1e30 a
    GRU's bounded states can keep it finite: 1e32, not inf)."""
    from nmt.base.errors import NmtError

    with pytest.raises(NmtError, match="not finite for 3 updates in a row"):
        train(tmp_path, *FAST, "optimizer.lr=1e38", "trainer.grad_clip=0", "trainer.max_bad_steps=3",
              "trainer.max_steps=50", "trainer.val_every=1", cache_dir=cache_dir)
    assert (tmp_path / "checkpoints" / "last.pt").exists()   # the last good one is kept
