"""summary.json and the printed end of the run say which setting ended the
run, and where the data has a test set, how best.pt scores on it."""

import json

import pytest

from nmt.commands.train import finish_lines
from tests.helpers import train

FAST = ("experiment=quickstart", "trainer.val_max_sentences=4", "trainer.heatmap_sentences=0",
        "trainer.keep_last=0")


@pytest.mark.parametrize("overrides, setting, reason", [
    (("trainer.max_steps=2", "trainer.val_every=2"), "trainer.max_steps", "trainer.max_steps=2 reached"),
    (("trainer.max_steps=1000", "trainer.val_every=1000", "trainer.max_minutes=0.0001"), "trainer.max_minutes",
     "time budget trainer.max_minutes=0.0001 spent"),
    (("trainer.max_steps=1000", "trainer.val_every=1", "trainer.patience=1", "optimizer.lr=1e-9"),
     "trainer.patience", "early stopping: BLEU did not improve for trainer.patience=1 validations"),
])
def test_the_summary_names_what_stopped_the_run(tmp_path, cache_dir, overrides, setting, reason):
    trainer = train(tmp_path, *FAST, *overrides, "trainer.test_max_sentences=0", cache_dir=cache_dir)
    assert json.loads((tmp_path / "summary.json").read_text())["stopped_by"] == setting
    first = finish_lines(tmp_path, trainer.summary, trainer.settings, None)[0]
    assert first.startswith(f"nmt: finished at step {trainer.progress.step}, {reason}; best validation BLEU ")


def test_best_pt_is_scored_on_the_test_set_and_compare_shows_it(tmp_path, cache_dir, capsys):
    from nmt.commands.compare import main as compare
    from nmt.base.scoring import score_translations
    from nmt.translator import Translator

    run = tmp_path / "sweep" / "0"
    trainer = train(run, *FAST, "trainer.max_steps=4", "trainer.val_every=2", "data.n_test=7",
                    "trainer.test_max_sentences=5", cache_dir=cache_dir)
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["test_sentences"], summary["test_checkpoint"], summary["test_search"]) == (5, "best.pt", "greedy")
    pairs = trainer.data.test[:5]
    best = Translator.from_checkpoint(run / "checkpoints" / "best.pt", device="cpu")
    bleu, chrf, _, _ = score_translations([o.text for o in best.translate([s for s, _ in pairs])],
                                          [t for _, t in pairs])
    assert (summary["test_bleu"], summary["test_chrf"]) == pytest.approx((bleu, chrf))
    assert f"  test set: BLEU {bleu:.2f} chrF {chrf:.2f} (best.pt, 5 sentences, greedy)" in \
        finish_lines(run, summary, trainer.settings, None)
    assert compare([str(tmp_path / "sweep")]) == 0
    header, row = [[cell.strip() for cell in line.strip("|").split("|")]
                   for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][:2]
    assert row[header.index("test_bleu")] == f"{bleu:.2f}"
