"""read_lines and read_parallel on real files: formats, line ends, bad input."""

import gzip

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nmt.data.readers import read_lines, read_parallel
from nmt.base.errors import NmtError


def write(path, data: bytes):
    if path.name.endswith(".gz"):
        with gzip.open(path, "wb") as handle:
            handle.write(data)
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize("name", ["plain.txt", "packed.txt.gz"])
def test_plain_and_gzip(tmp_path, name):
    path = write(tmp_path / name, "Ein Hund.\nZwei Katzen.\n".encode())
    assert read_lines(path) == ["Ein Hund.", "Zwei Katzen."]


@pytest.mark.parametrize("name", ["win.txt", "win.txt.gz"])
def test_bom_and_crlf_are_removed(tmp_path, name):
    path = write(tmp_path / name, b"\xef\xbb\xbfErste\r\nZweite\r\n\r\nVierte")
    # BOM gone, \r gone, the empty third line kept, no final newline is fine
    assert read_lines(path) == ["Erste", "Zweite", "", "Vierte"]


def test_only_newline_ends_a_line(tmp_path):
    path = write(tmp_path / "odd.txt", "a\u2028b\x0bc\rd\n".encode())
    assert read_lines(path) == ["a\u2028b\x0bc\rd"]       # only a final \r is a line end


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = write(tmp_path / "latin1.de", "gut\nschön\n".encode("latin-1"))
    with pytest.raises(NmtError, match=r"latin1\.de line 2: invalid UTF-8 \(byte 4 "):
        read_lines(path)


def test_invalid_utf8_in_gzip_names_line(tmp_path):
    path = write(tmp_path / "bad.gz", b"ok\nok\n\xff\n")
    with pytest.raises(NmtError, match=r"bad\.gz line 3: invalid UTF-8"):
        read_lines(path)


def test_missing_path(tmp_path):
    with pytest.raises(NmtError, match=r"nothere\.de: no such file") as error:
        read_lines(tmp_path / "nothere.de")
    assert "\n" not in str(error.value)


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(NmtError, match="is a directory"):
        read_lines(tmp_path)


def test_not_really_gzip(tmp_path):
    path = tmp_path / "fake.gz"
    path.write_bytes(b"plain text\n")
    with pytest.raises(NmtError, match="not a valid gzip file"):
        read_lines(path)


def test_parallel_pairs(tmp_path):
    src = write(tmp_path / "a.de", b"eins\nzwei\n")
    tgt = write(tmp_path / "a.en.gz", b"one\ntwo\n")
    assert read_parallel(src, tgt) == [("eins", "one"), ("zwei", "two")]


def test_unequal_line_counts_name_both_files(tmp_path):
    src = write(tmp_path / "train.de", b"a\nb\nc\n")
    tgt = write(tmp_path / "train.en", b"a\nb\n")
    with pytest.raises(NmtError) as error:
        read_parallel(src, tgt)
    message = str(error.value)
    assert "train.de has 3 lines" in message and "train.en has 2" in message
    assert "\n" not in message


@pytest.mark.parametrize("empty_side", ["src", "tgt"])
def test_empty_file(tmp_path, empty_side):
    files = {"src": write(tmp_path / "x.de", b"a\n"), "tgt": write(tmp_path / "x.en", b"b\n")}
    files[empty_side].write_bytes(b"")
    with pytest.raises(NmtError, match=rf"{files[empty_side].name} is empty"):
        read_parallel(files["src"], files["tgt"])


line_text = st.text(st.characters(exclude_characters="\n\r", exclude_categories=("Cs",)), max_size=30)


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(line_text, max_size=8), packed=st.booleans())
def test_round_trip_any_unicode(tmp_path_factory, lines, packed):
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = "x" + lines[0]                 # a leading BOM is removed by design
    path = tmp_path_factory.getbasetemp() / ("round.txt.gz" if packed else "round.txt")
    write(path, "".join(line + "\n" for line in lines).encode("utf-8"))
    assert read_lines(path) == lines
