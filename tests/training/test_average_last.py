"""trainer.average_last=N: the last N step checkpoints averaged into
averaged.pt at the end of a run, validated, scored in summary.json."""

import json

import pytest
import sacrebleu
import torch

from tests.helpers import one_thread, train  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = ("experiment=quickstart", "model.encoder.embed_dim=16", "model.encoder.hidden_size=32",
        "model.decoder.embed_dim=16", "model.decoder.hidden_size=32", "trainer.val_max_sentences=20",
        "trainer.heatmap_sentences=0", "trainer.log_every=5")


def test_average_of_the_last_three_step_checkpoints(tmp_path, cache_dir, capsys):
    # validations at steps 2, 4, 6, 8; keep_last=1 < 3, so the trainer keeps 3
    trainer = train(tmp_path, *TINY, "trainer.max_steps=8", "trainer.val_every=2", "trainer.keep_last=1",
                    "trainer.average_last=3", cache_dir=cache_dir)
    folder = tmp_path / "checkpoints"
    assert sorted(p.name for p in folder.glob("step_*.pt")) == ["step_4.pt", "step_6.pt", "step_8.pt"]
    averaged = torch.load(folder / "averaged.pt", weights_only=True)
    steps = [torch.load(folder / f"step_{s}.pt", weights_only=True)["model"] for s in (4, 6, 8)]
    for name, tensor in averaged["model"].items():
        by_hand = (steps[0][name] + steps[1][name] + steps[2][name]) / 3
        assert torch.allclose(tensor, by_hand, rtol=0, atol=1e-6), name
    assert not torch.equal(steps[0][next(iter(steps[0]))], steps[2][next(iter(steps[2]))])  # they moved

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["averaged_steps"] == [4, 6, 8]
    # the summary's score is averaged.pt's own: translate the validation sentences with it
    from nmt.translator import Translator

    pairs = trainer.valid_pairs
    outputs = Translator.from_checkpoint(folder / "averaged.pt", device="cpu").translate([s for s, _ in pairs])
    bleu = sacrebleu.corpus_bleu([o.text for o in outputs], [[t for _, t in pairs]]).score
    assert summary["averaged_bleu"] == pytest.approx(bleu, abs=1e-9)
    for key in ("averaged_chrf", "averaged_loss", "averaged_perplexity"):
        assert isinstance(summary[key], float), key

    # and nmt.translate reads it as any checkpoint
    from nmt.translate import main

    source = tmp_path / "in.txt"
    source.write_text(pairs[0][0] + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["--checkpoint", str(folder / "averaged.pt"), "--input", str(source), "--beam-size", "1"]) == 0
    assert capsys.readouterr().out.strip() == outputs[0].text.strip()


def test_off_by_default_and_fewer_checkpoints_than_asked(tmp_path, cache_dir):
    train(tmp_path / "off", *TINY, "trainer.max_steps=2", "trainer.val_every=1", "trainer.keep_last=1",
          cache_dir=cache_dir)
    assert not (tmp_path / "off" / "checkpoints" / "averaged.pt").exists()
    assert "averaged_bleu" not in json.loads((tmp_path / "off" / "summary.json").read_text())

    # two validations, average_last=5: the two there are
    train(tmp_path / "few", *TINY, "trainer.max_steps=2", "trainer.val_every=1", "trainer.keep_last=0",
          "trainer.average_last=5", cache_dir=cache_dir)
    summary = json.loads((tmp_path / "few" / "summary.json").read_text())
    assert summary["averaged_steps"] == [1, 2]
    assert (tmp_path / "few" / "checkpoints" / "averaged.pt").exists()
