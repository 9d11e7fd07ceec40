"""nmt-data multi30k DEST: Multi30k task 1 from a mirror (a folder, a file:// URL, a
loopback HTTP server) into the folder data.path takes, every file checked by its
SHA-256; a damaged file, a different file already there and no network are one line
each and leave DEST as it was."""

import functools
import hashlib
import http.server
import shutil
import socket
import threading
import urllib.error
from pathlib import Path

import pytest

from nmt.data import multi30k_files
from nmt.data.__main__ import main
from nmt.data.corpora import load_multi30k
from tests.docs_commands import TINY, page_commands
from tests.helpers import MULTI30K, ROOT, run_cli

pytestmark = pytest.mark.skipif(not (MULTI30K / "train.de.gz").is_file(), reason="no Multi30k copy beside the repo")
MAIN_FILES = [f"{base}.{lang}.gz" for base in ("train", "val", "test_2016_flickr") for lang in ("de", "en", "fr", "cs")]
MAIN_FILES += ["test_2017_flickr.de.gz", "test_2017_flickr.en.gz"]


def test_the_checksums_are_those_of_the_published_files():
    assert sorted(multi30k_files.file_names()) == sorted(MAIN_FILES)
    for name in MAIN_FILES:
        assert hashlib.sha256((MULTI30K / name).read_bytes()).hexdigest() == multi30k_files.SHA256[name]
    others = set(multi30k_files.file_names(all_tests=True)) - set(MAIN_FILES)
    assert others == {"test_2017_flickr.fr.gz", "test_2017_mscoco.de.gz", "test_2017_mscoco.en.gz",
                      "test_2017_mscoco.fr.gz", "test_2018_flickr.de.gz", "test_2018_flickr.en.gz",
                      "test_2018_flickr.fr.gz", "test_2018_flickr.cs.gz"}
    assert multi30k_files.file_names(("de", "en")) == [n for n in multi30k_files.SHA256
                                                       if n in MAIN_FILES and n[-5:-3] in ("de", "en")]


def check_folder(dest: Path, names=MAIN_FILES) -> None:
    assert sorted(p.name for p in dest.iterdir()) == sorted(names)        # no temporary file left
    for name in names:
        assert (dest / name).read_bytes() == (MULTI30K / name).read_bytes()


def test_from_a_folder_makes_the_folder_data_path_takes(tmp_path):
    done = run_cli("nmt.data", "multi30k", "data/multi30k", "--from", str(MULTI30K), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    lines = done.stdout.decode().splitlines()
    assert lines[0] == "fetched train.de.gz (637,044 bytes, SHA-256 checked)"
    assert lines[-1] == ("data/multi30k: 14 files of Multi30k task 1 (de, en, fr, cs; 14 fetched, 0 already "
                         "there); train with data.path=data/multi30k")
    check_folder(tmp_path / "data" / "multi30k")
    corpus = load_multi30k("de", "en", tmp_path / "data" / "multi30k")
    assert (len(corpus.train), len(corpus.valid), len(corpus.test)) == (29000, 1014, 1000)
    again = run_cli("nmt.data", "multi30k", "data/multi30k", "--from", str(MULTI30K), cwd=tmp_path)
    assert again.returncode == 0 and "0 fetched, 14 already there" in again.stdout.decode()


def test_from_a_file_url_and_some_languages(tmp_path):
    assert main(["multi30k", str(tmp_path / "m"), "--from", MULTI30K.as_uri(), "--languages", "de", "en"]) == 0
    check_folder(tmp_path / "m", [n for n in MAIN_FILES if n[-5:-3] in ("de", "en")])


@pytest.fixture
def http_mirror():
    """A loopback HTTP server (http.server in a thread) serving the Multi30k copy; its URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(MULTI30K))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_from_a_loopback_http_server(tmp_path, http_mirror, capsys):
    assert main(["multi30k", str(tmp_path / "m"), "--from", http_mirror]) == 0
    check_folder(tmp_path / "m")
    assert capsys.readouterr().out.count("SHA-256 checked") == 14


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nmt: error: "), captured.err
    return lines[0]


def test_a_damaged_mirror_file_fails_its_checksum_and_leaves_nothing(tmp_path, http_mirror, capsys):
    mirror = tmp_path / "mirror"
    shutil.copytree(MULTI30K, mirror)
    (mirror / "val.en.gz").chmod(0o644)
    data = bytearray((mirror / "val.en.gz").read_bytes())
    data[len(data) // 2] ^= 0x10
    (mirror / "val.en.gz").write_bytes(bytes(data))
    for source in (str(mirror), mirror.as_uri()):
        assert main(["multi30k", str(tmp_path / "new" / "m"), "--from", source]) == 1
        line = one_error_line(capsys)
        assert "val.en.gz: SHA-256 " in line and "nothing was written" in line
        assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    assert main(["multi30k", str(kept), "--from", str(mirror)]) == 1
    assert "SHA-256" in one_error_line(capsys)
    assert [p.name for p in kept.iterdir()] == ["notes.txt"]          # no half file, no temporary file


def test_a_different_file_there_is_replaced_only_with_overwrite(tmp_path, capsys):
    dest = tmp_path / "m"
    dest.mkdir()
    (dest / "train.en.gz").write_bytes(b"my own")
    assert main(["multi30k", str(dest), "--from", str(MULTI30K)]) == 1
    line = one_error_line(capsys)
    assert "train.en.gz exists and is not Multi30k's train.en.gz" in line and "--overwrite" in line
    assert [p.name for p in dest.iterdir()] == ["train.en.gz"] and (dest / "train.en.gz").read_bytes() == b"my own"
    assert main(["multi30k", str(dest), "--from", str(MULTI30K), "--overwrite"]) == 0
    check_folder(dest)


def test_a_mirror_without_a_file_names_it(tmp_path, capsys):
    assert main(["multi30k", str(tmp_path / "m"), "--from", str(MULTI30K), "--all-tests"]) == 1
    line = one_error_line(capsys)
    assert "test_2017_flickr.fr.gz: no such file" in line and "nothing was written" in line
    assert not (tmp_path / "m").exists()
    assert main(["multi30k", str(tmp_path / "m"), "--from", str(tmp_path / "nowhere")]) == 1
    assert "no such folder" in one_error_line(capsys)


def test_offline_is_one_line_that_names_from(tmp_path, capsys, monkeypatch):
    def no_network(url, timeout=None):
        raise urllib.error.URLError(socket.gaierror(-3, "Temporary failure in name resolution"))

    monkeypatch.setattr(multi30k_files.urllib.request, "urlopen", no_network)
    assert main(["multi30k", str(tmp_path / "m")]) == 1
    line = one_error_line(capsys)
    assert line.startswith("nmt: error: cannot reach raw.githubusercontent.com (offline?")
    assert "--from DIR_OR_URL" in line
    assert not (tmp_path / "m").exists()


def test_a_closed_port_is_one_line(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["multi30k", str(tmp_path / "m"), "--from", f"http://127.0.0.1:{port}/"]) == 1
    assert "cannot reach 127.0.0.1" in one_error_line(capsys)


def test_a_readme_recipe_runs_on_the_folder_the_command_makes(tmp_path, cache_dir):
    commands = page_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "nmt-data multi30k data/multi30k" in commands
    done = run_cli("nmt.data", "multi30k", "data/multi30k", "--from", f"{MULTI30K}/", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    recipe = next(c for c in commands if "model/positional=rotary" in c)
    assert recipe.startswith("python -m nmt.train ") and "data.path=data/multi30k" in recipe
    small = [f"model.{side}.{key}={value}" for side in ("encoder", "decoder")
             for key, value in (("d_model", 32), ("ff_size", 64), ("layers", 1))]
    args = recipe.split()[3:] + list(TINY) + small + [f"cache_dir={cache_dir}", "hydra.run.dir=run"]
    trained = run_cli("nmt.train", *args, cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr.decode()[-3000:]
    assert (tmp_path / "run" / "summary.json").is_file()
