"""Nothing deletes or overwrites what it did not write (issue 46, item 2):
`nmt.export --force` replaces only an earlier export, `nmt.compare --csv`
refuses a run's own files as nmt.average and nmt.translate do."""

import json

import pytest

from nmt.commands.compare import main as compare
from nmt.commands.export import main as export
from tests.test_compare import make_run


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nmt: error: "), err
    return err


def snapshot(folder) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def fake_run(folder):
    """What nmt.train leaves: a checkpoint, metrics, a log."""
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "best.pt").write_bytes(b"weights")
    (folder / "metrics.jsonl").write_text('{"step": 100, "bleu": 3.0}\n')
    (folder / "train.log").write_text("log\n")


def fake_export(folder, *extra):
    folder.mkdir(parents=True)
    for name in ("model.bin", "config.json", "shared_vocabulary.json", "source.spm", "target.spm", *extra):
        (folder / name).write_bytes(b"x")
    (folder / "nmt_export.json").write_text(json.dumps({"format": 1}))


@pytest.mark.parametrize("case", ["run folder", "checkpoint's folder", "user's folder", "export plus a file",
                                  "export plus a folder", "export with a link"])
def test_export_force_refuses_what_is_not_an_export(tmp_path, capsys, case):
    checkpoint = tmp_path / "elsewhere" / "best.pt"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b"not read: the output is refused first")
    output = tmp_path / "out"
    if case == "run folder":
        fake_run(output)
    elif case == "checkpoint's folder":
        output, checkpoint = checkpoint.parent, checkpoint
    elif case == "user's folder":
        output.mkdir()
        (output / "thesis.tex").write_text("years of work\n")
    elif case == "export plus a file":
        fake_export(output, "notes.txt")
    elif case == "export plus a folder":
        fake_export(output)
        (output / "data").mkdir()
        (output / "data" / "corpus.txt").write_text("mine\n")
    else:
        fake_export(output)
        (output / "config.json").unlink()
        (output / "config.json").symlink_to(tmp_path / "elsewhere" / "best.pt")
    before = snapshot(output)
    assert export(["--checkpoint", str(checkpoint), "--output", str(output), "--force"]) == 1
    line = error_line(capsys)
    assert "--force replaces only a folder written by nmt.export" in line
    assert snapshot(output) == before and checkpoint.read_bytes() == b"not read: the output is refused first"


def test_compare_csv_refuses_any_runs_own_file(tmp_path, capsys):
    make_run(tmp_path / "sweep", "0", "bahdanau", [(100, 10.0)])
    other = tmp_path / "other_run"                     # a run not in the sweep compared
    fake_run(other)
    (other / ".hydra").mkdir()
    (other / ".hydra" / "config.yaml").write_text("model: {}\n")
    for target in (other / "metrics.jsonl", other / "checkpoints" / "best.pt", other / "train.log",
                   other / ".hydra" / "config.yaml"):
        before = target.read_bytes()
        assert compare([str(tmp_path / "sweep"), "--csv", str(target)]) == 1
        assert "belongs to the run in" in error_line(capsys) and target.read_bytes() == before
    assert compare([str(tmp_path / "sweep"), "--csv", str(tmp_path / "table.csv")]) == 0
    assert (tmp_path / "table.csv").read_text().startswith("best,run,")
