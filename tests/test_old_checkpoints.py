"""A checkpoint written before checkpoints named their parts by registry name
(at commit feedb79, its config's parts as `_target_` class paths) still loads
and translates as it did then: the same text, scores and attention, bit for
bit (tests/fixtures/old_checkpoints/make.py wrote the file and the JSON)."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from nmt.translator import Translator

FIXTURES = Path(__file__).parent / "fixtures" / "old_checkpoints"
OLD = sorted(FIXTURES.glob("*.pt"))


@pytest.mark.parametrize("path", OLD, ids=[p.stem for p in OLD])
def test_an_old_checkpoint_translates_as_it_did(path):
    stored = torch.load(path, weights_only=True)["config"]["model"]
    assert stored["attention"]["_target_"].startswith("nmt.models.")      # the old form: class paths
    expected = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    translator = Translator.from_checkpoint(path, device="cpu")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)            # as make.py translated: sums split over threads round otherwise
    try:
        _compare(translator, expected)
    finally:
        torch.set_num_threads(threads)


def _compare(translator, expected) -> None:
    """The same words; the same scores and attention to float32 rounding. The expected
    values were written on one processor (make.py); another one's vector units sum in
    another order, so bits may differ there while nothing a reader sees does."""
    for beam in (1, 3):
        got = translator.translate(expected["sentences"], beam_size=beam)
        for translation, want in zip(got, expected[f"beam_{beam}"], strict=True):
            assert translation.text == want["text"]
            assert float(translation.score) == pytest.approx(want["score"], rel=1e-5, abs=1e-5)
            attention = np.asarray(want["attention"], dtype=np.float32)
            assert translation.attention.shape == attention.shape
            np.testing.assert_allclose(translation.attention, attention, rtol=0, atol=1e-5)
