"""A study record read strictly: missing is "not run"; anything else that is not
a whole JSON object of the right shape is one NmtError line naming the file, so
the report exits non-zero instead of counting a broken record as not run (a
folder, a link loop, non-UTF-8 bytes, a half-written file, 100,000 nested
brackets, `records` itself a FIFO). A finished record's figures are checked
before any table reads them: `eval` a non-empty object, each known figure a
number (or null where it may be missing)."""

import errno
import json
import math
import os
from pathlib import Path

from nmt import NmtError, refuse_special

ADVICE = "remove it to train the run again"
MAX_BYTES = 64 * 2**20        # a record holds figures, hypotheses and curves: megabytes at most
# figures the tables and the report compute with (nmt_study.metrics.evaluate, tables.collect)
NUMBERS = ("parameters", "test_bleu", "test_chrf", "valid_perplexity", "valid_bleu", "last_valid_bleu",
           "tokens_per_s", "sentences_per_s", "best_step", "final_step", "wall_s", "train_seconds",
           "test_sentences", "beam_size", "coverage_penalty", "target_bleu", "steps_to_target", "entropy",
           "aer", "aer_links", "aer_skipped")


def _unreadable(path, error: OSError) -> NmtError:
    if isinstance(error, IsADirectoryError):
        return NmtError(f"study record {path} is a folder, not a record (a JSON file); {ADVICE}")
    if isinstance(error, NotADirectoryError):
        return NmtError(f"study record {path}: a part of its path is a file, not a folder "
                        f"({error.filename or path}); a record lives in OUT/records/NAME/; move that file away")
    if error.errno == errno.ELOOP:
        return NmtError(f"study record {path} is a symbolic link loop (it leads back to itself); {ADVICE}")
    return NmtError(f"study record {path} cannot be read ({error.strerror or error}); {ADVICE}")


def _read_bytes(path: Path) -> bytes | None:
    """The file's bytes; None where there is no record."""
    for part in reversed(path.parents):      # `records` a FIFO or a file: named, not "not run"
        if part.exists() and not part.is_dir() and part != path:
            refuse_special(part, "study records folder", "it must be a folder; move it away")
            raise NmtError(f"study record {path}: {part} is a file, not a folder; move it away")
    refuse_special(path, "study record", "a record is a JSON file; " + ADVICE)
    try:
        if os.path.getsize(path) > MAX_BYTES:
            raise NmtError(f"study record {path} is over {MAX_BYTES // 2**20} MB, more than a record holds; {ADVICE}")
        return path.read_bytes()
    except FileNotFoundError:
        if path.is_symlink():
            raise NmtError(f"study record {path} is a link to nothing ({os.readlink(path)}); {ADVICE}") from None
        return None
    except OSError as error:
        raise _unreadable(path, error) from None


def load_record(path) -> dict | None:
    """The record at `path` as a dict, None where there is none, else NmtError."""
    path = Path(path)
    data = _read_bytes(path)
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NmtError(f"study record {path} is not UTF-8 text (byte {error.start + 1}); {ADVICE}") from None
    try:
        record = json.loads(text)
    except RecursionError:
        raise NmtError(f"study record {path} is nested too deeply to be a record; {ADVICE}") from None
    except ValueError as error:
        where = f"line {error.lineno}, column {error.colno}" if hasattr(error, "lineno") else "somewhere"
        raise NmtError(f"study record {path} is not whole JSON ({error.msg} at {where}; half-written?); "
                       f"{ADVICE}") from None
    if not isinstance(record, dict):
        raise NmtError(f"study record {path}: not a JSON object; {ADVICE}")
    if record.get("status") == "finished":
        check_figures(path, record)
    return record


def _kind(value) -> str:
    """What a value is, as the line says it: text "34.1", a list, an object, true, inf."""
    if isinstance(value, str):
        return f"text {json.dumps(value)[:30]}"
    if isinstance(value, bool):
        return str(value).lower()
    return {list: "a list", dict: "an object"}.get(type(value), str(value))


def check_figures(path, record: dict) -> None:
    """NmtError naming the first figure of a finished record that is not a number."""
    figures = record.get("eval")
    if not isinstance(figures, dict) or not figures:
        shown = json.dumps(figures)[:40] if not isinstance(figures, dict) else "{}"
        raise NmtError(f"study record {path}: finished, but its figures (eval) are {shown}; {ADVICE}")
    for key in NUMBERS:
        value = figures.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                (isinstance(value, float) and math.isinf(value)):
            raise NmtError(f"study record {path}: eval.{key} is {_kind(value)}, not a number; {ADVICE}")
    seconds = record.get("eval_seconds", 0)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise NmtError(f"study record {path}: eval_seconds is {_kind(seconds)}, not a number; {ADVICE}")
