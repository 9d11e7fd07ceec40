"""RUN/metrics.jsonl: one JSON record per validation, read one way everywhere.

The trainer appends a line per validation ({"step": N, "bleu": ..., ...}). A
line that is not a whole record, such as a write cut short by a kill, is not
a validation: every reader leaves it out, as the trainer drops it when the
run resumes (nmt.training.run_dir.drop_metrics_after).
"""

import json
import math
from pathlib import Path

METRICS_FILE = "metrics.jsonl"
METRIC_SIGN = {"bleu": 1.0, "chrf": 1.0, "loss": -1.0}   # training maximises sign * trainer.metric


def _number(text: str) -> float:
    """A JSON number as the trainer writes one: a number too large for a float
    (1e400) is not one of them."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text} is out of range")
    return value


def parse_record(line: str) -> dict | None:
    """One line -> its record, or None when it is not a whole record with a whole-number step."""
    try:
        record = json.loads(line, parse_float=_number)
        record["step"] = int(record["step"])
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, AttributeError, RecursionError):
        return None
    return record


def read_records(run_dir: Path) -> list[dict]:
    """The validation records of RUN/metrics.jsonl in file order ([] when the run has none yet)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return [record for record in map(parse_record, lines) if record is not None]
