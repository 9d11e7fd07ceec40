"""summary.json says which setting ended the run."""

import json

import pytest

from tests.helpers import train

FAST = ("experiment=quickstart", "trainer.val_max_sentences=4", "trainer.heatmap_sentences=0",
        "trainer.keep_last=0")


@pytest.mark.parametrize("overrides, setting", [
    (("trainer.max_steps=2", "trainer.val_every=2"), "trainer.max_steps"),
    (("trainer.max_steps=1000", "trainer.val_every=1000", "trainer.max_minutes=0.0001"), "trainer.max_minutes"),
])
def test_the_summary_names_what_stopped_the_run(tmp_path, cache_dir, overrides, setting):
    train(tmp_path, *FAST, *overrides, cache_dir=cache_dir)
    assert json.loads((tmp_path / "summary.json").read_text())["stopped_by"] == setting
