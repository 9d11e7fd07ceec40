"""No traceback, no hang (issue 46, item 5): each case below was a traceback
or a search without end, and is now one `nmt: error:` line."""

import json
import os

import pytest
import torch

from nmt.base.errors import NmtError
from tests.test_compare import make_run


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nmt: error: ") and "Traceback" not in err, err
    return err


@pytest.fixture
def loop(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    return tmp_path / "a"


def test_a_link_loop_as_an_output_is_one_line(loop, tmp_path, toy_checkpoint, capsys):
    from nmt.commands.average import main as average
    from nmt.commands.compare import main as compare
    from nmt.commands.export import main as export
    from nmt.commands.translate import main as translate

    source = tmp_path / "in.txt"
    source.write_text("the first of may\n")
    make_run(tmp_path / "sweep", "0", "bahdanau", [(100, 10.0)])
    for run, option in ((lambda: translate(["--checkpoint", str(toy_checkpoint), "--input", str(source),
                                             "--output", str(loop)]), "--output"),
                        (lambda: translate(["--checkpoint", str(toy_checkpoint), "--input", str(source),
                                            "--attention-html", str(loop)]), "--attention-html"),
                        (lambda: average([str(toy_checkpoint), "--output", str(loop)]), "--output"),
                        (lambda: export(["--checkpoint", str(toy_checkpoint), "--output", str(loop)]), "--output"),
                        (lambda: compare([str(tmp_path / "sweep"), "--csv", str(loop)]), "--csv")):
        assert run() == 1
        assert f"{option} {loop} is a symbolic link loop" in one_line(capsys)


def test_a_tensor_header_claiming_a_huge_storage_is_refused(tmp_path, toy_checkpoint, capsys):
    from nmt.commands.average import main as average
    from nmt.commands.export import main as export
    from nmt.store.checkpoints import load_checkpoint
    from nmt.commands.translate import main as translate
    from nmt.translator import Translator

    state = torch.load(toy_checkpoint, weights_only=True)
    name = next(iter(state["model"]))
    state["model"][name] = torch.zeros(1).expand(2**20, 2**20)   # 2^40 values over 4 stored bytes
    path = tmp_path / "huge.pt"
    torch.save(state, path)
    with pytest.raises(NmtError, match=f"weight {name} claims 1099511627776 values"):
        load_checkpoint(path)
    source = tmp_path / "in.txt"
    source.write_text("the first of may\n")
    assert translate(["--checkpoint", str(path), "--input", str(source)]) == 1
    assert "claims 1099511627776 values" in one_line(capsys)
    assert average([str(toy_checkpoint), str(path), "--output", str(tmp_path / "avg.pt")]) == 1
    assert "claims 1099511627776 values" in one_line(capsys)
    assert export(["--checkpoint", str(path), "--output", str(tmp_path / "ct2")]) == 1
    assert "claims 1099511627776 values" in one_line(capsys) and not (tmp_path / "ct2").exists()
    with pytest.raises(NmtError, match="claims 1099511627776 values"):   # the explorer's and the API's route
        Translator.from_checkpoint(path)
    # the optimiser's state too, which a resume loads
    state = torch.load(toy_checkpoint, weights_only=True)
    state["optimizer"] = {"state": {0: {"exp_avg": torch.zeros(1).expand(2**30)}}, "param_groups": []}
    torch.save(state, path)
    with pytest.raises(NmtError, match="optimizer.state.0.exp_avg claims 1073741824 values"):
        load_checkpoint(path)


def test_an_empty_input_and_reference_is_one_line(tmp_path, toy_checkpoint, capsys):
    from nmt.commands.translate import main as translate

    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert translate(["--checkpoint", str(toy_checkpoint), "--input", str(empty), "--reference", str(empty)]) == 1
    assert "no sentences to score" in one_line(capsys)


def test_dpi_is_bounded(tmp_path, toy_checkpoint, capsys):
    from nmt.commands.translate import parse_args

    with pytest.raises(SystemExit) as done:
        parse_args(["--checkpoint", str(toy_checkpoint), "--dpi", "100000"])
    assert done.value.code == 2 and "--dpi: 100000 is over 1200" in capsys.readouterr().err
    assert parse_args(["--checkpoint", str(toy_checkpoint), "--dpi", "1200"]).dpi == 1200


@pytest.mark.parametrize("line", ['{"step": 1e400, "bleu": 3}', '{"step": 100, "bleu": 1e400}', "[1]", "7"])
def test_compare_leaves_out_a_metrics_line_nmt_never_writes(tmp_path, capsys, line):
    from nmt.commands.compare import main as compare

    make_run(tmp_path, "0", "bahdanau", [(100, 10.0)])
    with open(tmp_path / "0" / "metrics.jsonl", "a") as log:
        log.write(line + "\n")
    assert compare([str(tmp_path)]) == 0
    assert "10.00 at step 100" in capsys.readouterr().out          # the whole record only


@pytest.mark.parametrize("field", ["max_src_len", "attention_layer", "quantization", "checkpoint"])
def test_an_export_metadata_field_that_is_null_is_one_line(tmp_path, field):
    from nmt.deploy.layout import read_metadata

    for name in ("model.bin", "source.spm", "target.spm"):
        (tmp_path / name).write_bytes(b"x")
    metadata = {"format": 1, "checkpoint": "best.pt", "quantization": "int8", "max_src_len": 32,
                "max_tgt_len": None, "positions": 1024, "attention_layer": 1}
    (tmp_path / "nmt_export.json").write_text(json.dumps(metadata))
    assert read_metadata(tmp_path)["max_src_len"] == 32
    (tmp_path / "nmt_export.json").write_text(json.dumps(dict(metadata, **{field: None})))
    with pytest.raises(NmtError, match=f"{field} is null, not what nmt.export writes"):
        read_metadata(tmp_path)


@pytest.mark.parametrize("override, message", [
    ("+optimizer._args_=[1]", "optimizer._args_: nmt builds each part from its named settings only"),
    ("trainer.seed=9223372036854775808", "trainer.seed=9223372036854775808: must be in [0, 9223372036854775807]"),
    ("trainer.val_beam_size=10000", "trainer.val_beam_size=10000: must be in [1, 100]"),
])
def test_config_values_that_once_failed_late_are_one_line(override, message):
    from nmt.training.config_checks import check_config
    from tests.helpers import make_config

    with pytest.raises(NmtError) as error:
        check_config(make_config("data=toy", override))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_every_decoder_has_a_step_cap(toy_checkpoint, capsys, tmp_path):
    """The quickstart model is an RNN: no position table bounds its outputs."""
    from nmt.decoding.limits import decode_step_cap
    from nmt.commands.translate import main as translate
    from nmt.translator import Translator

    translator = Translator.from_checkpoint(toy_checkpoint, device="cpu", max_len_extra=10**9)
    cap = decode_step_cap(translator.max_src_len)
    assert translator.max_tgt_len == cap == 4 * translator.max_src_len + 10
    (out,) = translator.translate(["the first of may"], min_length=cap - 1)   # ends at the cap, not 10^9
    assert len(out.tokens) == cap - 1
    source = tmp_path / "in.txt"
    source.write_text("the first of may\n")
    assert translate(["--checkpoint", str(toy_checkpoint), "--input", str(source), "--min-length", "100000",
                      "--max-length-extra", "1000000000"]) == 1
    assert "min_length=100000 (--min-length) is more than any output may have" in one_line(capsys)


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_lock_that_is_not_a_file_is_one_line(tmp_path, kind):
    from nmt.training.run_dir import RunDirLock

    lock = tmp_path / ".lock"
    lock.mkdir() if kind == "folder" else os.mkfifo(lock)
    with pytest.raises(NmtError, match=f"its .lock is {'a folder' if kind == 'folder' else 'a FIFO'}"):
        with RunDirLock(tmp_path):
            pass


@pytest.mark.parametrize("module", ["nmt.train", "nmt.translate", "nmt.average", "nmt.explore", "nmt.compare",
                                    "nmt.export", "nmt_study", "nmt_study.eflomal_links", "nmt.data.alignments"])
def test_a_zero_file_size_limit_is_one_line_before_anything_loads(module, tmp_path):
    """`ulimit -f 0`: torch's import alone writes a temporary file (EFBIG); every
    command says so in one line instead of a cascade of tracebacks."""
    import subprocess
    import sys

    from tests.helpers import ROOT

    done = subprocess.run(["bash", "-c", f'ulimit -f 0; exec "{sys.executable}" -m {module} --help'], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == "", done.stderr[-2000:]
    assert done.stderr == ("nmt: error: the file-size limit (ulimit -f) is 0 bytes: nmt writes temporary files, "
                           "logs and outputs; raise it (ulimit -f unlimited) and run the command again\n")
