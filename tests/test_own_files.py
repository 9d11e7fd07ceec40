"""No command replaces a file it did not write (issue 58, item 1): every
writer refuses an existing file that is not what it writes itself, in one
line and before anything is written; it replaces its own earlier output;
--overwrite (overwrite=True in Python) replaces anything."""

import json

import pytest

from nmt.base import own_files
from nmt.commands.average import main as average
from nmt.commands.compare import main as compare
from nmt.data.alignments import main as alignments
from nmt.base.errors import NmtError
from nmt.commands.translate import main as translate
from nmt.viz.notebook import InlineView
from tests.test_compare import make_run

MINE = b"a user's only copy\n"


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nmt: error: ") and "Traceback" not in err, err
    return err


def snapshot(folder) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def routes(tmp_path, checkpoint):
    """(name, the output path, the command given extra arguments) of every writer."""
    source = tmp_path / "in.txt"
    source.write_text("the first of may\n")
    make_run(tmp_path / "sweep", "0", "bahdanau", [(100, 10.0)])
    given = ["--checkpoint", str(checkpoint), "--input", str(source)]
    return [
        ("translate --output", tmp_path / "hyp.txt", lambda p, x: translate(given + ["--output", str(p)] + x)),
        ("translate --attention-html", tmp_path / "page.html",
         lambda p, x: translate(given + ["--attention-html", str(p)] + x)),
        ("translate --beam-tree", tmp_path / "tree.json", lambda p, x: translate(given + ["--beam-tree", str(p)] + x)),
        ("translate --plot-attention", tmp_path / "maps" / "00001.png",
         lambda p, x: translate(given + ["--plot-attention", str(p.parent)] + x)),
        ("average --output", tmp_path / "avg.pt", lambda p, x: average([str(checkpoint), "--output", str(p)] + x)),
        ("compare --csv", tmp_path / "table.csv", lambda p, x: compare([str(tmp_path / "sweep"), "--csv", str(p)] + x)),
        ("alignments", tmp_path / "toy.align", lambda p, x: alignments(["toy", str(p), "--n-train", "5"] + x)),
        ("InlineView.save", tmp_path / "view.html", lambda p, x: _save(p, x)),
    ]


def _save(path, extra) -> int:
    """InlineView.save as a command: 0, or 1 after the error line."""
    from nmt.base.cli import print_error
    try:
        InlineView("<html><body>a view</body></html>", 100).save(path, overwrite="--overwrite" in extra)
    except NmtError as error:
        print_error(error)
        return 1
    return 0


@pytest.fixture
def writers(tmp_path, toy_checkpoint):
    return routes(tmp_path, toy_checkpoint)


@pytest.mark.parametrize("index", range(8))
def test_a_file_nmt_did_not_write_is_refused_on_every_route(tmp_path, writers, capsys, index):
    name, path, run = writers[index]
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(MINE)
    before = snapshot(tmp_path)
    assert run(path, []) == 1, name
    line = one_line(capsys)
    assert f"{path} exists and is not {_purpose(name)} that nmt wrote" in line, line
    assert ("add overwrite=True" if name == "InlineView.save" else "add --overwrite") in line, line
    assert snapshot(tmp_path) == before, name            # nothing written anywhere
    assert run(path, ["--overwrite"]) == 0, name
    assert path.read_bytes() != MINE and own_files.wrote(path, _purpose(name))


def _purpose(name: str) -> str:
    return {"translate --output": own_files.TRANSLATIONS, "translate --attention-html": own_files.PAGE,
            "translate --beam-tree": own_files.BEAM_TREE, "translate --plot-attention": own_files.HEATMAP,
            "average --output": own_files.AVERAGED, "compare --csv": own_files.TABLE,
            "alignments": own_files.ALIGNMENTS, "InlineView.save": own_files.PAGE}[name]


@pytest.mark.parametrize("index", range(8))
def test_nmts_own_output_is_replaced_and_an_edited_one_is_not(tmp_path, writers, capsys, index):
    name, path, run = writers[index]
    path.parent.mkdir(exist_ok=True)
    assert run(path, []) == 0, name
    assert own_files.wrote(path, _purpose(name))
    assert run(path, []) == 0, name                       # the same purpose: replaced
    capsys.readouterr()
    with open(path, "ab") as file:                        # edited by the user since
        file.write(b"\nmy note\n")
    edited = path.read_bytes()
    assert run(path, []) == 1, name
    assert "exists and is not" in one_line(capsys) and path.read_bytes() == edited


def test_a_file_written_for_another_purpose_is_refused(tmp_path, capsys):
    """A sweep's table written over nmt's own translations (or a page over a
    table) is still a file that writer did not write."""
    make_run(tmp_path / "sweep", "0", "bahdanau", [(100, 10.0)])
    hyp = tmp_path / "hyp.txt"
    own_files.write(hyp, b"a translation\n", own_files.TRANSLATIONS)
    assert compare([str(tmp_path / "sweep"), "--csv", str(hyp)]) == 1
    assert "is not a comparison table that nmt wrote" in one_line(capsys)
    assert hyp.read_bytes() == b"a translation\n"


def test_hydra_and_export_records_are_not_tables_to_replace(tmp_path, capsys):
    """The issue's cases: --csv over a sweep's multirun.yaml or an export's model.bin."""
    make_run(tmp_path / "sweep", "0", "bahdanau", [(100, 10.0)])
    record = tmp_path / "old_sweep" / "multirun.yaml"
    record.parent.mkdir()
    record.write_text("hydra:\n  mode: MULTIRUN\n")
    model = tmp_path / "export" / "model.bin"
    model.parent.mkdir()
    model.write_bytes(b"\x00weights")
    (model.parent / "nmt_export.json").write_text(json.dumps({"format": 1}))
    for target in (record, model):
        before = target.read_bytes()
        assert compare([str(tmp_path / "sweep"), "--csv", str(target)]) == 1
        one_line(capsys)
        assert target.read_bytes() == before


def test_a_users_pictures_beside_nmts_are_refused_before_any_is_drawn(tmp_path, toy_checkpoint, capsys):
    source = tmp_path / "in.txt"
    source.write_text("the first of may\nthe second of june\n")
    maps = tmp_path / "maps"
    maps.mkdir()
    (maps / "00002.png").write_bytes(MINE)
    assert translate(["--checkpoint", str(toy_checkpoint), "--input", str(source), "--plot-attention", str(maps),
                      "--output", str(tmp_path / "hyp.txt")]) == 1
    assert f"{maps / '00002.png'} exists and is not a heatmap" in one_line(capsys)
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["00002.png", "in.txt"]


@pytest.mark.parametrize("option", ["--out", "--train-out"])
def test_eflomal_links_refuses_a_file_it_did_not_write_before_aligning(tmp_path, capsys, option):
    from nmt_study.eflomal_links import main as eflomal_links

    mine = tmp_path / "mine.align"
    mine.write_bytes(MINE)
    paths = {"--out": str(tmp_path / "test.align"), "--train-out": str(tmp_path / "train.align"), option: str(mine)}
    assert eflomal_links(["--data", "toy", *(x for pair in paths.items() for x in pair)]) == 1
    assert f"{option} {mine} exists and is not an alignment file that nmt wrote" in one_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.align"] and mine.read_bytes() == MINE


def no_xattrs(monkeypatch):
    """A file system that keeps no extended attributes (ENOTSUP, as NFS or vfat say)."""
    import errno
    import os

    def unsupported(*args, **kwargs):
        raise OSError(errno.ENOTSUP, os.strerror(errno.ENOTSUP))

    monkeypatch.setattr(os, "setxattr", unsupported)
    monkeypatch.setattr(os, "getxattr", unsupported)


@pytest.mark.parametrize("index", range(8))
def test_without_extended_attributes_the_folders_manifest_holds_the_mark(tmp_path, writers, capsys, monkeypatch,
                                                                         index):
    no_xattrs(monkeypatch)
    name, path, run = writers[index]
    path.parent.mkdir(exist_ok=True)
    assert run(path, []) == 0, name
    manifest = json.loads((path.parent / own_files.MANIFEST).read_text())
    assert manifest["files"][path.name].startswith(f"{_purpose(name)} sha256:")
    assert own_files.wrote(path, _purpose(name))
    assert run(path, []) == 0, name                       # nmt's own output: replaced, no --overwrite needed
    capsys.readouterr()
    with open(path, "ab") as file:                        # edited by the user since: refused
        file.write(b"\nmy note\n")
    edited = path.read_bytes()
    assert run(path, []) == 1, name
    assert "exists and is not" in one_line(capsys) and path.read_bytes() == edited
    mine = path.with_name("mine" + path.suffix)           # a user's file beside: refused as ever
    mine.write_bytes(MINE)
    if name != "translate --plot-attention":             # (its names are its own: 00001.png, ...)
        assert run(mine, []) == 1, name
        assert "exists and is not" in one_line(capsys) and mine.read_bytes() == MINE


def test_a_manifest_nmt_did_not_write_is_left_alone(tmp_path, monkeypatch):
    """Another tool's .nmt-wrote.json (or a FIFO of that name) is never replaced: the
    file nmt writes goes unmarked, so the next write over it asks for --overwrite."""
    import os

    no_xattrs(monkeypatch)
    theirs = tmp_path / own_files.MANIFEST
    theirs.write_text('{"files": {"hyp.txt": "a translation file sha256:0"}}')
    own_files.write(tmp_path / "hyp.txt", b"a translation\n", own_files.TRANSLATIONS)
    assert theirs.read_text() == '{"files": {"hyp.txt": "a translation file sha256:0"}}'
    assert not own_files.wrote(tmp_path / "hyp.txt", own_files.TRANSLATIONS)
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / own_files.MANIFEST)
    own_files.write(fifo / "hyp.txt", b"a translation\n", own_files.TRANSLATIONS)   # no hang, no write into it
    assert not own_files.wrote(fifo / "hyp.txt", own_files.TRANSLATIONS)
