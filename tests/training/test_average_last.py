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
    from nmt.commands.translate import main

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


# -- trainer.average_best=N ---------------------------------------------------

def test_best_steps_by_hand():
    from nmt.store.checkpoints import best_steps

    scores = {100: 5.0, 200: 30.0, 300: 10.0, 400: 20.0, 500: float("nan"), 600: 20.0}
    assert best_steps(scores, 2) == [200, 600]           # of the equal 20s, the later step
    assert best_steps(scores, 3) == [200, 400, 600]
    assert best_steps(scores, 6) == [100, 200, 300, 400, 500, 600]   # NaN last, but kept when asked
    assert best_steps(scores, 0) == [] and best_steps({}, 3) == []


def test_prune_keeps_the_newest_and_the_named(tmp_path):
    from nmt.store.checkpoints import prune_step_checkpoints

    for step in (1, 2, 3, 4, 5):
        (tmp_path / f"step_{step}.pt").write_bytes(b"x")
    (tmp_path / "step_2_copy.pt").write_bytes(b"mine")       # not a step checkpoint: left alone
    prune_step_checkpoints(tmp_path, 2, also_keep=[1, 4])
    assert sorted(p.name for p in tmp_path.glob("step_*.pt")) == ["step_1.pt", "step_2_copy.pt", "step_4.pt",
                                                                 "step_5.pt"]
    prune_step_checkpoints(tmp_path, 0, also_keep=[4])
    assert sorted(p.name for p in tmp_path.glob("step_*.pt")) == ["step_2_copy.pt", "step_4.pt"]


def scripted_bleu(monkeypatch, scores: list[float]):
    """Validation's BLEU replaced by `scores`, one a validation in turn (the
    rest of each result is the real validation's); later calls are real."""
    import dataclasses

    from nmt.training import validation as trainer_module

    real, calls = trainer_module.validate, []

    def validate(*args, **kwargs):
        result = real(*args, **kwargs)
        calls.append(result)
        if len(calls) <= len(scores):
            return dataclasses.replace(result, bleu=scores[len(calls) - 1])
        return result

    monkeypatch.setattr(trainer_module, "validate", validate)
    return calls


def test_average_of_the_best_two_survives_resume(tmp_path, cache_dir, monkeypatch):
    # validations at steps 1..6 score 5, 30, 10, 20 | 1, 2: the best two are
    # steps 2 and 4, neither of them among the last two, and the run is
    # stopped after step 4 and resumed, so the scores must come back with it
    common = (*TINY, "trainer.val_every=1", "trainer.keep_last=1", "trainer.average_best=2")
    scripted_bleu(monkeypatch, [5.0, 30.0, 10.0, 20.0])
    train(tmp_path, *common, "trainer.max_steps=4", cache_dir=cache_dir)
    folder = tmp_path / "checkpoints"
    assert sorted(p.name for p in folder.glob("step_*.pt")) == ["step_2.pt", "step_4.pt"]
    before = {s: torch.load(folder / f"step_{s}.pt", weights_only=True)["model"] for s in (2, 4)}

    scripted_bleu(monkeypatch, [1.0, 2.0])
    train(tmp_path, *common, "trainer.max_steps=6", "trainer.resume=auto", cache_dir=cache_dir)
    assert sorted(p.name for p in folder.glob("step_*.pt")) == ["step_2.pt", "step_4.pt", "step_6.pt"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["averaged_best_steps"] == [2, 4]
    assert "averaged_steps" not in summary                   # average_last is off
    averaged = torch.load(folder / "averaged_best.pt", weights_only=True)
    for name, tensor in averaged["model"].items():
        assert torch.allclose(tensor, (before[2][name] + before[4][name]) / 2, rtol=0, atol=1e-6), name
    for key in ("averaged_best_bleu", "averaged_best_chrf", "averaged_best_loss", "averaged_best_perplexity"):
        assert isinstance(summary[key], float), key


def test_average_best_beside_average_last(tmp_path, cache_dir, monkeypatch):
    scripted_bleu(monkeypatch, [30.0, 1.0, 2.0, 3.0])
    train(tmp_path, *TINY, "trainer.max_steps=4", "trainer.val_every=1", "trainer.keep_last=0",
          "trainer.average_last=2", "trainer.average_best=1", cache_dir=cache_dir)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["averaged_steps"] == [3, 4] and summary["averaged_best_steps"] == [1]
    folder = tmp_path / "checkpoints"
    assert sorted(p.name for p in folder.glob("step_*.pt")) == ["step_1.pt", "step_3.pt", "step_4.pt"]
    best = torch.load(folder / "averaged_best.pt", weights_only=True)["model"]
    step_1 = torch.load(folder / "step_1.pt", weights_only=True)["model"]
    assert all(torch.equal(best[name], step_1[name]) for name in step_1)
