"""Text files in, lists of lines out: plain or gzip, UTF-8, one sentence a line.

Every problem a user can cause (missing file, a folder, bad bytes, files
that do not line up) becomes one `NmtError` line naming the file.
"""

import gzip
import zlib
from pathlib import Path

from nmt.base.errors import NmtError
from nmt.base.file_inputs import refuse_special

BOM = "\ufeff"


def _read_bytes_checks(path: Path) -> None:
    if not path.exists():
        raise NmtError(f"{path}: no such file; check the data paths in the config")
    if path.is_dir():
        raise NmtError(f"{path} is a directory; expected a text file with one sentence a line")
    refuse_special(path, "", "expected a text file with one sentence a line")


def _read_bytes(path: Path) -> bytes:
    _read_bytes_checks(path)
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as handle:
                return handle.read()
        return path.read_bytes()
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise NmtError(f"{path}: not a valid gzip file ({error}); "
                       "decompress it or fix the download") from None
    except OSError as error:
        raise NmtError(f"cannot read {path}: {error.strerror or error}") from None


def read_lines(path) -> list[str]:
    """The lines of a UTF-8 text file, without line ends.

    Plain or `.gz` (by name). A leading byte-order mark and a `\\r` before
    each `\\n` (Windows line ends) are removed; nothing else is touched, so
    a line keeps its spaces and any other control characters. Only `\\n`
    ends a line: Unicode line separators inside a sentence stay in it.
    """
    path = Path(path)
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise NmtError(f"{path} line {line}: invalid UTF-8 (byte {column} of the line); "
                       "convert the file to UTF-8") from None
    text = text.removeprefix(BOM)
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":          # the usual final newline
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def count_lines(path) -> int:
    """How many lines read_lines would return, read a buffer at a time (a .gz one
    decompressed): what the line-count check needs before torch is imported."""
    path = Path(path)
    _read_bytes_checks(path)
    count, last, start = 0, b"\n", True
    try:
        with (gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")) as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                if start:
                    chunk, start = chunk.removeprefix(BOM.encode("utf-8")), False
                if chunk:
                    count, last = count + chunk.count(b"\n"), chunk[-1:]
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise NmtError(f"{path}: not a valid gzip file ({error}); decompress it or fix the download") from None
    except OSError as error:
        raise NmtError(f"cannot read {path}: {error.strerror or error}") from None
    return count + (last != b"\n")


def check_parallel_counts(src_path, n_src: int, tgt_path, n_tgt: int) -> None:
    """Two files of a pair: neither empty, the same number of lines."""
    for path, n in ((src_path, n_src), (tgt_path, n_tgt)):
        if not n:
            raise NmtError(f"{path} is empty; expected one sentence a line")
    if n_src != n_tgt:
        raise NmtError(f"{src_path} has {n_src} lines but {tgt_path} has {n_tgt}; "
                       "parallel files must have one translation per line")


def read_parallel(src_path, tgt_path) -> list[tuple[str, str]]:
    """Line-aligned (source, target) pairs from two files of equal length."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    check_parallel_counts(src_path, len(src), tgt_path, len(tgt))
    return list(zip(src, tgt))
