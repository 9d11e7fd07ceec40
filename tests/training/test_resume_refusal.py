"""A resume refused for other data or another model says, on one line, what differs
(checkpoint against config), the override left out with the run's own command, and,
for other data only, the way past the check (trainer.resume_force=true)."""

import shutil

import pytest
from omegaconf import OmegaConf

from nmt.base.errors import ResumeRefusal
from nmt.store.checkpoints import load_checkpoint
from nmt.training.resume_checks import check_resume_data, check_resume_model
from nmt.training.run_command import resume_difference


@pytest.fixture
def run(tmp_path, toy_checkpoint):
    """A copy of the toy run: its checkpoint and the overrides its folder keeps."""
    folder = tmp_path / "run"
    shutil.copytree(toy_checkpoint.parent.parent, folder, ignore=shutil.ignore_patterns("step_*.pt", "last.pt"))
    (folder / ".hydra").mkdir(exist_ok=True)        # as nmt.train keeps the command that trained it
    (folder / ".hydra" / "overrides.yaml").write_text("- experiment=quickstart\n- trainer.max_steps=60\n")
    return folder, folder / "checkpoints" / "best.pt"


def test_another_model_names_both_settings_and_the_runs_command_without_resume_force(run):
    folder, checkpoint = run
    model = OmegaConf.create(load_checkpoint(checkpoint, mmap=True)["config"]["model"])
    model.decoder.hidden_size = 2 * model.decoder.hidden_size
    with pytest.raises(ResumeRefusal) as caught:
        check_resume_model(checkpoint, model)
    assert not caught.value.forcible
    assert caught.value.detail.startswith("it was trained with another model (checkpoint: model.decoder.hidden_size=")
    line = str(resume_difference(checkpoint, ["trainer.max_steps=60"], caught.value))
    assert line.startswith(f"cannot resume from {checkpoint}: {caught.value.detail}; this command lacks "
                           "experiment=quickstart (the run's command, kept in ")
    assert "continue it with: " in line and "\n" not in line
    assert "resume_force" not in line               # forcing cannot make other weights fit


def test_other_data_names_both_settings_the_runs_command_and_resume_force(run):
    folder, checkpoint = run
    data = OmegaConf.create(load_checkpoint(checkpoint, mmap=True)["config"]["data"])
    data.vocab_size = 200
    with pytest.raises(ResumeRefusal) as caught:
        check_resume_data(checkpoint, data)
    assert caught.value.forcible
    assert "(checkpoint: data.vocab_size=240, tokenizer " in caught.value.detail
    assert "; this config: data.vocab_size=200, tokenizer " in caught.value.detail
    line = str(resume_difference(checkpoint, ["trainer.max_steps=60", "data.vocab_size=200"], caught.value))
    assert line.startswith(f"cannot resume from {checkpoint}: {caught.value.detail}; this command lacks "
                           "experiment=quickstart; adds data.vocab_size=200 (the run's command, kept in ")
    assert line.endswith(", or set trainer.resume_force=true to continue anyway with this command's data")
    check_resume_data(checkpoint, data, force=True)  # the way the line names lets it through
