"""Export and Hugging Face folders are checked member by member before anything
opens them (issue 58, items 2 and 3).

Each edit below once hung (a FIFO as an export's config.json or
shared_vocabulary.json: CTranslate2 opens it and waits), translated with
exit 0 and another tokenisation (a FIFO as an --hf folder's
tokenizer_config.json), or gave a traceback (a shortened vocabulary:
"Invalid token ID 11"; a pickled pytorch_model.bin: UnpicklingError; a
truncated model.safetensors: SafetensorError; d_model=10^9 allocated before
failing). Every route that reads such a folder now refuses each edit in one
`nmt: error:` line naming the member, within a timeout, and nothing ran."""

import json
import os
import pickle
import shutil

import pytest

from nmt.base.errors import NmtError
from tests.helpers import run_cli

TIMEOUT = 120    # a hang is a failure, not a stuck test run


def _vocab(edit):
    def change(folder):
        path = folder / "shared_vocabulary.json"
        path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    return change


def _fifo(name):
    def change(folder):
        (folder / name).unlink()
        os.mkfifo(folder / name)
    return change


def _loop(name):
    def change(folder):
        (folder / name).unlink()
        (folder / name).symlink_to(folder / name)
    return change


EXPORT_EDITS = {   # name: (edit of an export folder, what the line says)
    "config-fifo": (_fifo("config.json"), "config.json is a FIFO (named pipe), not a regular file"),
    "vocabulary-fifo": (_fifo("shared_vocabulary.json"), "shared_vocabulary.json is a FIFO (named pipe)"),
    "metadata-fifo": (_fifo("nmt_export.json"), "nmt_export.json is a FIFO (named pipe)"),
    "spm-fifo": (_fifo("source.spm"), "source.spm is a FIFO (named pipe)"),
    "model-loop": (_loop("model.bin"), "model.bin is a symbolic link loop"),
    "model-a-folder": (lambda f: ((f / "model.bin").unlink(), (f / "model.bin").mkdir()), "model.bin is a folder"),
    "vocabulary-short": (_vocab(lambda v: v[:11]), "has 11 tokens where the sentencepiece model source.spm has"),
    "vocabulary-no-pad": (_vocab(lambda v: ["x"] + v[1:]), "has no <pad> token"),
    "vocabulary-swapped": (_vocab(lambda v: v[:5] + [v[6], v[5]] + v[7:]), "at id 5 where the sentencepiece model"),
    "vocabulary-a-dict": (_vocab(lambda v: {"a": 1}), "is not a vocabulary (a list of tokens)"),
    "config-not-json": (lambda f: (f / "config.json").write_text("{"), "config.json is not JSON"),
}


@pytest.fixture(scope="module")
def export_folder(tmp_path_factory, cache_dir):
    pytest.importorskip("ctranslate2")
    from nmt.commands.export import main as export
    from tests.helpers import train
    from tests.test_export import TINY

    run = tmp_path_factory.mktemp("run")
    train(run, "data=toy", *TINY, "data.n_train=300", "trainer.max_steps=2", "trainer.val_every=2",
          "trainer.val_max_sentences=2", "trainer.heatmap_sentences=0", cache_dir=cache_dir)
    folder = tmp_path_factory.mktemp("export") / "model"
    assert export(["--checkpoint", str(run / "checkpoints" / "best.pt"), "--output", str(folder)]) == 0
    return folder


def one_line(err: str, member, says: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nmt: error: ") and "Traceback" not in err, err
    assert str(member) in lines[0] or member.name in lines[0], err
    assert says in lines[0], err


@pytest.mark.parametrize("route", ["translate", "translate --engine ctranslate2", "api"])
@pytest.mark.parametrize("edit", EXPORT_EDITS)
def test_every_route_refuses_an_edited_export_in_one_line(export_folder, tmp_path, edit, route):
    folder = tmp_path / "model"
    shutil.copytree(export_folder, folder)
    change, says = EXPORT_EDITS[edit]
    change(folder)
    source = tmp_path / "in.txt"
    source.write_text("the first of may\n")
    if route == "api":
        from nmt.deploy.engine import CTranslate2Translator

        with pytest.raises(NmtError) as error:
            CTranslate2Translator(folder, threads=1)
        err = f"nmt: error: {error.value}\n"
    else:
        engine = ["--engine", "ctranslate2"] if "engine" in route else []
        done = run_cli("nmt.translate", "--checkpoint", str(folder), *engine, "--input", str(source),
                       timeout=TIMEOUT)
        assert done.returncode == 1 and done.stdout == b""
        err = done.stderr.decode()
    one_line(err, folder, says)


def test_an_unedited_export_still_translates(export_folder, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("the first of may\n")
    done = run_cli("nmt.translate", "--checkpoint", str(export_folder), "--input", str(source), timeout=TIMEOUT)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr


def test_export_force_from_inside_the_export_refuses_before_touching_it(export_folder, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(export_folder, folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    checkpoint = json.loads((folder / "nmt_export.json").read_text())["checkpoint"]
    done = run_cli("nmt.export", "--checkpoint", checkpoint, "--output", ".", "--force", cwd=folder)
    line = done.stderr.decode().strip()
    assert done.returncode == 1 and "Traceback" not in line and line.count("\n") == 0
    assert "--output . is the folder this command runs in" in line
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


class RunsCode:
    """A pickle that would create a file when loaded by a full unpickler."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _pickled(folder):
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(RunsCode(str(folder.parent / "MARKER"))))


def _truncated(folder):
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _config(**changes):
    def change(folder):
        path = folder / "config.json"
        path.write_text(json.dumps(dict(json.loads(path.read_text()), **changes)))
    return change


HF_EDITS = {
    "tokenizer-config-fifo": (_fifo("tokenizer_config.json"), "tokenizer_config.json is a FIFO (named pipe)"),
    "config-fifo": (_fifo("config.json"), "config.json is a FIFO (named pipe)"),
    "vocab-fifo": (_fifo("vocab.json"), "vocab.json is a FIFO (named pipe)"),
    "spm-loop": (_loop("source.spm"), "source.spm is a symbolic link loop"),
    "pickled-weights": (_pickled, "pytorch_model.bin was refused: it is a pickle holding objects that could run code"),
    "truncated-safetensors": (_truncated, "model.safetensors is truncated: tensor"),
    "huge-d-model": (_config(d_model=10**9), "config.json describes a model of at least"),
    "huge-layers": (_config(encoder_layers=10**9), "config.json sets encoder_layers=1000000000"),
    "config-not-json": (lambda f: (f / "config.json").write_text("{"), "config.json is not JSON"),
    "tokenizer-config-not-json": (lambda f: (f / "tokenizer_config.json").write_text("{"),
                                  "cannot load its tokenizer"),
}


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.hf_marian import build_tiny_marian

    return build_tiny_marian(tmp_path_factory.mktemp("marian") / "model")


@pytest.mark.parametrize("route", ["translate", "explore", "api"])
@pytest.mark.parametrize("edit", HF_EDITS)
def test_every_route_refuses_an_edited_hf_folder_in_one_line(marian, tmp_path, edit, route):
    folder = tmp_path / "model"
    shutil.copytree(marian, folder)
    change, says = HF_EDITS[edit]
    change(folder)
    source = tmp_path / "in.txt"
    source.write_text("ninety ninety june\n")
    if route == "api":
        from nmt.hf.translator import HFTranslator

        with pytest.raises(NmtError) as error:
            HFTranslator(str(folder), device="cpu")
        err = f"nmt: error: {error.value}\n"
    else:
        args = ["--input", str(source)] if route == "translate" else ["--port", "65432"]
        done = run_cli(f"nmt.{route}", "--hf", str(folder), *args, timeout=TIMEOUT)
        assert done.returncode == 1 and done.stdout == b""
        err = done.stderr.decode()
    one_line(err, folder, says)
    assert not (tmp_path / "MARKER").exists()


def test_an_unedited_hf_folder_still_translates(marian, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("ninety ninety june\n")
    done = run_cli("nmt.translate", "--hf", str(marian), "--input", str(source), timeout=TIMEOUT)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr
