"""The log (train.log, and the output when it is redirected) says how
training goes without the progress bar: a line every trainer.log_every
updates, the sacreBLEU and chrF signatures once, and a model line without
the data line's statistics."""

import re

from tests.helpers import run_cli


def test_the_log_has_a_line_every_log_every_updates(tmp_path, cache_dir):
    run = tmp_path / "run"
    done = run_cli("nmt.train", "experiment=quickstart", "trainer.max_steps=4", "trainer.val_every=2",
                   "trainer.log_every=2", "trainer.val_max_sentences=8", "trainer.heatmap_sentences=1",
                   f"cache_dir={cache_dir}", f"hydra.run.dir={run}")
    assert done.returncode == 0, done.stderr.decode()
    for text in (done.stdout.decode(), (run / "train.log").read_text()):
        steps = re.findall(r"\] - step (\d+) epoch \d+ \| loss [\d.]+ \| lr [\d.e+-]+ \| \d+ tok/s", text)
        assert steps == ["1", "2", "4"], text                           # step 1, then every log_every
        assert text.count("sacreBLEU nrefs:1") == 1, text               # two validations, one signature line
        model = next(line for line in text.splitlines() if "] - model: " in line)
        assert "train_pairs" not in model and "parameters on cpu" in model
