"""nmt in a notebook: importing it leaves matplotlib's backend alone, a translation
draws its own heatmap (a Figure, and inline HTML for Jupyter), and `nmt.train.fit`
trains from Python and returns the run folder and its summary."""

import base64
import json
import subprocess
import sys

import numpy as np
import pytest
from matplotlib.figure import Figure

from nmt.base.errors import NmtError
from nmt.translator import Translation, Translator

IMPORT_EVERY_MODULE = """
import importlib, pkgutil, sys
import matplotlib
{setup}
import nmt
skipped = []
for info in pkgutil.walk_packages(nmt.__path__, "nmt."):
    try:
        importlib.import_module(info.name)
    except ImportError as error:       # an optional extra that is not installed (eflomal)
        skipped.append(info.name)
print(len(list(pkgutil.walk_packages(nmt.__path__, "nmt."))) - len(skipped), {check})
"""


def run_python(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_importing_every_module_leaves_an_unset_backend_unset():
    # matplotlib resolves its backend lazily; Agg forced on import would resolve it to agg
    imported, backend = run_python(
        IMPORT_EVERY_MODULE.format(setup="", check="matplotlib.rcParams._get_backend_or_none()")
    )
    assert int(imported) > 100
    assert backend == "None"


def test_importing_every_module_keeps_a_chosen_backend():
    imported, backend = run_python(
        IMPORT_EVERY_MODULE.format(setup='matplotlib.use("svg")', check="matplotlib.get_backend()")
    )
    assert backend == "svg"


def test_translation_plots_its_attention(toy_checkpoint):
    translator = Translator.from_checkpoint(toy_checkpoint, device="cpu")
    out = translator.translate(["monday the first of may nineteen ninety"])[0]
    fig = out.plot()
    assert isinstance(fig, Figure)
    image = fig.axes[0].images[0].get_array()  # (T, S): what was drawn
    assert image.shape == (len(out.tgt_pieces), len(out.src_pieces))
    assert np.allclose(image, out.attention)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == out.src_pieces
    assert fig._suptitle.get_text() == out.text
    assert len(fig.axes) == 2  # the heatmap and its colour bar


def test_translation_shows_inline_in_jupyter(toy_checkpoint):
    out = Translator.from_checkpoint(toy_checkpoint, device="cpu").translate(["sunday the third of june two thousand"])[
        0
    ]
    page = out._repr_html_()
    assert page.startswith(f"<p><b>{out.text}</b>")
    png = base64.b64decode(page.split("data:image/png;base64,", 1)[1].split('"', 1)[0])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_empty_translation_has_text_but_no_picture():
    empty = Translation("", 0.0, [], [], np.zeros((0, 0), dtype=np.float32))
    assert "<img" not in empty._repr_html_()
    with pytest.raises(NmtError, match="no attention to draw"):
        empty.plot()


def test_fit_trains_from_python_and_returns_the_run(tmp_path, cache_dir):
    import logging

    from hydra.core.hydra_config import HydraConfig

    from nmt.commands.train import fit

    handlers = list(logging.getLogger().handlers)
    result = fit(
        [
            "experiment=quickstart",
            "trainer.max_steps=20",
            "trainer.val_every=20",
            "trainer.val_max_sentences=10",
            "trainer.test_max_sentences=10",
            "trainer.heatmap_sentences=1",
            f"cache_dir={cache_dir}",
        ],
        run_dir=tmp_path / "run",
    )
    assert result.run_dir == (tmp_path / "run").resolve()
    assert result.summary == json.loads((result.run_dir / "summary.json").read_text())
    assert result.summary["step"] == 20 and result.summary["stopped_by"] == "trainer.max_steps"
    assert result.best_checkpoint == result.run_dir / "checkpoints" / "best.pt"
    assert result.best_checkpoint.is_file() and (result.run_dir / "train.log").is_file()
    assert "trainer.max_steps=20" in (result.run_dir / ".hydra" / "overrides.yaml").read_text()
    translator = Translator.from_checkpoint(result.best_checkpoint, device="cpu")
    assert translator.translate(["monday the first of may nineteen ninety"])[0].tgt_pieces[-1] == "</s>"
    # the process is left as it was: no handler writing to this run's train.log, no Hydra config
    assert logging.getLogger().handlers == handlers and not HydraConfig.initialized()
    logged = (result.run_dir / "train.log").read_text()
    logging.getLogger("nmt.train").warning("a line after the run")
    assert (result.run_dir / "train.log").read_text() == logged


def test_fit_says_what_is_wrong_in_one_line(tmp_path):
    from nmt.commands.train import fit

    with pytest.raises(
        NmtError, match=r"trainer.max_step=5: not a setting nmt knows; did you mean trainer.max_steps\?"
    ):
        fit(["experiment=quickstart", "trainer.max_step=5"], run_dir=tmp_path / "run")
    with pytest.raises(NmtError, match=r"trainer.grad_clip=-1: must be >= 0"):
        fit(["experiment=quickstart", "trainer.grad_clip=-1"], run_dir=tmp_path / "run")
    assert not (tmp_path / "run" / "checkpoints").exists()
