"""The coverage penalty's rule is written once (nmt.decoding.interface.check_coverage_penalty):
nmt.train, nmt.translate and the Python API refuse it without a beam with one
line of the same words, each naming the settings as its user writes them."""

import pytest

from nmt.base.errors import NmtError
from tests.helpers import run_cli

RULE = "{penalty}0.5 re-ranks the beam's hypotheses; set {beam} to 2 or more"


def test_the_three_ways_in_refuse_a_greedy_coverage_penalty_alike(tmp_path, toy_checkpoint):
    from nmt.translator import Translator

    trained = run_cli("nmt.train", "experiment=quickstart", "trainer.coverage_penalty=0.5",
                      "trainer.val_beam_size=1", f"hydra.run.dir={tmp_path / 'run'}")
    translated = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--coverage-penalty", "0.5",
                         "--beam-size", "1", input=b"the first of may nineteen ten\n")
    with pytest.raises(NmtError) as api:
        Translator.from_checkpoint(toy_checkpoint, device="cpu").translate(
            ["the first of may nineteen ten"], beam_size=1, coverage_penalty=0.5)

    assert (trained.returncode, translated.returncode) == (1, 1)
    assert trained.stderr.decode().strip() == "nmt: error: " + RULE.format(
        penalty="trainer.coverage_penalty=", beam="trainer.val_beam_size")
    assert translated.stderr.decode().strip() == "nmt: error: " + RULE.format(
        penalty="--coverage-penalty ", beam="--beam-size")
    assert str(api.value) == RULE.format(penalty="coverage_penalty=", beam="beam_size")
    assert not (tmp_path / "run" / "checkpoints").exists()      # refused before training
