"""A path that is not there is one line naming what is there, said before
torch is imported (the seconds of its import are the wait a typo costs)."""

import os
import subprocess
import sys

import pytest

from nmt.base.cli_checks import check_checkpoint_exists
from nmt.base.errors import NmtError


def run_with_importtime(module: str, *args: str, cwd) -> tuple[int, str, list[str]]:
    """(exit code, the nmt: error line, the modules imported) of `python -X importtime -m module args`."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", module, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    imported = [line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:") and "|" in line]
    errors = [line for line in done.stderr.splitlines() if line.startswith("nmt: error: ")]
    assert len(errors) == 1, done.stderr[-2000:]
    return done.returncode, errors[0], imported


@pytest.fixture
def run_folder(tmp_path):
    checkpoints = tmp_path / "run" / "checkpoints"
    checkpoints.mkdir(parents=True)
    for name in ("step_300.pt", "last.pt", "step_1200.pt", "best.pt", "step_50.pt"):
        (checkpoints / name).write_bytes(b"not read")
    (checkpoints / "notes.txt").write_text("not a checkpoint")
    return checkpoints


def test_a_missing_checkpoint_names_those_its_folder_holds(run_folder):
    with pytest.raises(NmtError) as caught:
        check_checkpoint_exists(run_folder / "step_30.pt")
    # best, last, then the steps in their order (50 before 300 before 1200), not .txt
    assert str(caught.value) == (f"checkpoint {run_folder / 'step_30.pt'} does not exist; {run_folder} holds "
                                 "best.pt, last.pt, step_50.pt, step_300.pt, step_1200.pt")
    with pytest.raises(NmtError, match="nor does its folder"):
        check_checkpoint_exists(run_folder / "nope" / "best.pt")
    check_checkpoint_exists(run_folder / "best.pt")         # there: nothing said


@pytest.mark.parametrize("module, args, message", [
    ("nmt.translate", ["--checkpoint", "{ck}/bestt.pt"],
     "checkpoint {ck}/bestt.pt does not exist; {ck} holds best.pt, last.pt, step_50.pt, step_300.pt, step_1200.pt"),
    ("nmt.explore", ["--checkpoint", "{ck}/bestt.pt"],
     "checkpoint {ck}/bestt.pt does not exist; {ck} holds best.pt, last.pt, step_50.pt, step_300.pt, step_1200.pt"),
    ("nmt.train", ["trainer.resume={ck}/lastt.pt"],
     "trainer.resume={ck}/lastt.pt: no such checkpoint file; {ck} holds best.pt, last.pt, step_50.pt, "
     "step_300.pt, step_1200.pt"),
    ("nmt.train", ["data=files", "data.train_src={ck}/train.de", "data.train_tgt=x", "data.valid_src=x",
                   "data.valid_tgt=x"],
     "{ck}/train.de: no such file; check the data paths in the config (data.train_src)"),
    ("nmt.average", ["{ck}/step_30.pt", "{ck}/step_300.pt", "--output", "avg.pt"],
     "checkpoint {ck}/step_30.pt does not exist; {ck} holds best.pt, last.pt, step_50.pt, step_300.pt, step_1200.pt"),
    ("nmt.export", ["--checkpoint", "{ck}/bestt.pt", "--output", "exported"],
     "checkpoint {ck}/bestt.pt does not exist; {ck} holds best.pt, last.pt, step_50.pt, step_300.pt, step_1200.pt"),
], ids=["translate", "explore", "train_resume", "train_data", "average", "export"])
def test_a_wrong_path_is_said_before_torch_is_imported(tmp_path, run_folder, module, args, message):
    code, error, imported = run_with_importtime(module, *[a.format(ck=run_folder) for a in args], cwd=tmp_path)
    assert code == 1
    assert error == "nmt: error: " + message.format(ck=run_folder)
    assert "torch" not in imported
