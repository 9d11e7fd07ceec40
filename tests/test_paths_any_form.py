"""Paths in any form (issue 58, item 3).

- A name over the file system's 255 bytes gave `OSError: [Errno 36] File name
  too long` (a traceback) on every route below; each is now one line naming
  the option, before anything is read or written.
- A name that is not UTF-8 (a folder `nu\\xff\\xfe`): an export there was
  written and then `UnicodeEncodeError` in write_stdout with exit 1; a good
  checkpoint there was called "truncated or not a checkpoint ... use a copy
  or train again". Now the export's line prints the name escaped and exits 0,
  the checkpoint translates as it does anywhere, and an error naming such a
  path prints it escaped.
- "truncated or not a checkpoint" only when the file's bytes say so.
"""

import os
import sys
import zipfile

import pytest

from nmt.base.errors import NmtError
from tests.helpers import run_cli
from tests.test_compare import make_run

LONG = "x" * 300
SAYS = "has a name of 300 bytes"


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nmt: error: ") and "Traceback" not in err, err
    return lines[0]


def exit_code(main, argv) -> int:
    try:
        return main(argv)
    except SystemExit as stop:       # argparse's refusal of an option (exit 2)
        return stop.code


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("the first of may\n")
    return path


def long_name_routes(tmp_path, checkpoint, source):
    from nmt.commands.average import main as average
    from nmt.commands.compare import main as compare
    from nmt.commands.explore import main as explore
    from nmt.commands.export import main as export
    from nmt.commands.translate import main as translate

    long = str(tmp_path / LONG)
    good = ["--checkpoint", str(checkpoint), "--input", str(source)]
    make_run(tmp_path / "sweep", "0", "bahdanau", [(100, 10.0)])
    return {
        "translate --output": (translate, [*good, "--output", long]),
        "translate --attention-html": (translate, [*good, "--attention-html", long]),
        "translate --beam-tree": (translate, [*good, "--beam-size", "2", "--beam-tree", long]),
        "translate --input": (translate, ["--checkpoint", str(checkpoint), "--input", long]),
        "translate --checkpoint": (translate, ["--checkpoint", long, "--input", str(source)]),
        "translate --reference": (translate, [*good, "--reference", long]),
        "translate --plot-attention": (translate, [*good, "--plot-attention", long + "/d"]),
        "average --output": (average, [str(checkpoint), "--output", long]),
        "average checkpoint": (average, [long, "--output", str(tmp_path / "avg.pt")]),
        "export --output": (export, ["--checkpoint", str(checkpoint), "--output", long]),
        "compare --csv": (compare, [str(tmp_path / "sweep"), "--csv", long]),
        "explore --checkpoint": (explore, ["--checkpoint", long, "--port", "65432"]),
        "explore --compare": (explore, ["--checkpoint", str(checkpoint), "--compare", long, "--port", "65432"]),
    }


def test_a_name_too_long_is_one_line_on_every_route(tmp_path, toy_checkpoint, source, capsys):
    for route, (main, argv) in long_name_routes(tmp_path, toy_checkpoint, source).items():
        assert exit_code(main, argv) in (1, 2), route
        line = one_line(capsys.readouterr().err)
        assert SAYS in line and "over the 255 bytes a name may have" in line, (route, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "sweep"]     # nothing written


def test_a_name_too_long_for_the_api_and_the_check_output_helper(tmp_path, toy_checkpoint):
    from nmt.base.cli_checks import check_output
    from nmt.translator import Translator

    with pytest.raises(NmtError, match=f"checkpoint .* {SAYS}"):
        Translator.from_checkpoint(tmp_path / LONG, device="cpu")
    with pytest.raises(NmtError, match=f"--output .* {SAYS}"):
        check_output(tmp_path / LONG)
    with pytest.raises(NmtError, match="is 4[0-9]{3} bytes long, over the 4096 bytes a path may have"):
        check_output(tmp_path / "/".join(["y" * 200] * 21))


@pytest.mark.parametrize("key", ["hydra.run.dir", "trainer.resume", "cache_dir"])
def test_training_refuses_a_path_setting_too_long_before_hydra_makes_a_folder(tmp_path, key):
    done = run_cli("nmt.train", "data=toy", f"{key}={tmp_path / LONG}", cwd=tmp_path)
    assert done.returncode == 1
    line = one_line(done.stderr.decode())
    assert line.startswith(f"nmt: error: {key}=/") and SAYS in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.fixture
def odd_folder(tmp_path):
    """A folder whose name is not UTF-8: b'nu\\xff\\xfe'."""
    folder = tmp_path / os.fsdecode(b"nu\xff\xfe")
    folder.mkdir()
    return folder


def test_a_checkpoint_in_a_non_utf8_folder_translates_as_anywhere(odd_folder, toy_checkpoint, source):
    (odd_folder / "best.pt").write_bytes(toy_checkpoint.read_bytes())
    plain = run_cli("nmt.translate", "--checkpoint", str(toy_checkpoint), "--input", str(source))
    odd = run_cli("nmt.translate", "--checkpoint", str(odd_folder / "best.pt"), "--input", str(source))
    assert odd.returncode == 0 and plain.returncode == 0, odd.stderr
    assert odd.stdout == plain.stdout and odd.stdout.strip()
    missing = run_cli("nmt.translate", "--checkpoint", str(odd_folder / "other.pt"), "--input", str(source))
    line = one_line(missing.stderr.decode())
    assert f"{odd_folder.parent}/nu\\xff\\xfe/other.pt does not exist" in line and "holds best.pt" in line


def test_an_export_into_a_non_utf8_folder_says_so_escaped_and_translates(odd_folder, source):
    pytest.importorskip("ctranslate2")
    from tests.test_export import TINY
    from tests.helpers import train

    run = odd_folder.parent / "run"
    train(run, "data=toy", *TINY, "data.n_train=300", "trainer.max_steps=2", "trainer.val_every=2",
          "trainer.val_max_sentences=2", "trainer.heatmap_sentences=0")
    done = run_cli("nmt.export", "--checkpoint", str(run / "checkpoints" / "best.pt"),
                   "--output", str(odd_folder / "exp"))
    assert done.returncode == 0, done.stderr
    assert b"nu\\xff\\xfe/exp" in done.stdout and done.stderr == b""
    translated = run_cli("nmt.translate", "--checkpoint", str(odd_folder / "exp"), "--input", str(source))
    assert translated.returncode == 0 and translated.stdout.strip(), translated.stderr


def test_the_truncated_advice_comes_only_from_the_files_bytes(tmp_path, toy_checkpoint):
    from nmt.store.checkpoints import load_checkpoint

    cut = tmp_path / "cut.pt"
    cut.write_bytes(toy_checkpoint.read_bytes()[:5000])
    with pytest.raises(NmtError, match="is truncated or not a checkpoint .*; no other checkpoint is beside it"):
        load_checkpoint(cut)
    sound = tmp_path / "sound.pt"        # a whole zip, every CRC right, that is not torch's
    with zipfile.ZipFile(sound, "w") as archive:
        archive.writestr("notes/data.txt", "not a model")
    with pytest.raises(NmtError) as error:
        load_checkpoint(sound)
    assert "is truncated or not a checkpoint" not in str(error.value) and "train again" not in str(error.value)
    assert "whole zip archive whose every record passes its CRC-32 check: it is not damaged" in str(error.value)
    if os.geteuid() != 0:                # root reads any file
        locked = tmp_path / "locked.pt"
        locked.write_bytes(toy_checkpoint.read_bytes())
        locked.chmod(0)
        with pytest.raises(NmtError, match="cannot read checkpoint .*Permission denied"):
            load_checkpoint(locked)


def test_printable_escapes_what_utf8_cannot_write():
    from nmt.base.path_names import printable

    assert printable(os.fsdecode(b"nu\xff\xfe/exp")) == "nu\\xff\\xfe/exp"
    assert printable("caf\u00e9") == "caf\u00e9"
    assert printable("a\ud800b") == "a\\ud800b"
    assert sys.getfilesystemencoding() == "utf-8"
