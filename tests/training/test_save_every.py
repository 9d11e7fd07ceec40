"""trainer.save_every=N: step checkpoints between validations, unscored,
pruned by trainer.keep_last, each a checkpoint of its own step. (A wrong
value of the key is refused by the schema: tests/test_config_schema.py.)"""

import json

import pytest
import torch

from tests.helpers import one_thread, train  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = ("experiment=quickstart", "model.encoder.embed_dim=16", "model.encoder.hidden_size=32",
        "model.decoder.embed_dim=16", "model.decoder.hidden_size=32", "trainer.val_max_sentences=20",
        "trainer.heatmap_sentences=0", "trainer.log_every=5")


def test_step_checkpoints_between_validations(tmp_path, cache_dir):
    # validations at 6 and the final one (step 9); saves at 2, 4, 8 between them
    train(tmp_path, *TINY, "trainer.max_steps=9", "trainer.val_every=6", "trainer.save_every=2",
          "trainer.keep_last=100", cache_dir=cache_dir)
    folder = tmp_path / "checkpoints"
    assert sorted((p.name for p in folder.glob("step_*.pt")), key=lambda n: int(n[5:-3])) == [
        "step_2.pt", "step_4.pt", "step_6.pt", "step_8.pt", "step_9.pt"]
    states = {s: torch.load(folder / f"step_{s}.pt", weights_only=True) for s in (2, 4, 8)}
    assert [states[s]["progress"]["step"] for s in (2, 4, 8)] == [2, 4, 8]
    name = next(iter(states[2]["model"]))
    assert not torch.equal(states[2]["model"][name], states[8]["model"][name])   # training moved on
    # only the validations are scored
    steps = [json.loads(line)["step"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert steps == [6, 9]


def test_keep_last_prunes_them_and_zero_is_off(tmp_path, cache_dir):
    train(tmp_path / "kept", *TINY, "trainer.max_steps=7", "trainer.val_every=100", "trainer.save_every=1",
          "trainer.keep_last=2", cache_dir=cache_dir)
    assert sorted(p.name for p in (tmp_path / "kept" / "checkpoints").glob("step_*.pt")) == [
        "step_6.pt", "step_7.pt"]
    train(tmp_path / "off", *TINY, "trainer.max_steps=7", "trainer.val_every=100", "trainer.keep_last=5",
          cache_dir=cache_dir)
    assert [p.name for p in (tmp_path / "off" / "checkpoints").glob("step_*.pt")] == ["step_7.pt"]

