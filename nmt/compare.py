"""python -m nmt.compare SWEEP_DIR: one table of every run of a sweep.

Reads each run folder's `.hydra/overrides.yaml` and `summary.json` and prints
the overrides that differ between runs, parameters, BLEU, chrF, perplexity,
tokens/s and wall time, as Markdown; `--csv FILE` also writes CSV.
"""

if __name__ == "__main__":      # first of all: Ctrl-C while torch loads is one line too
    from nmt import signals

    signals.install("; --csv is written whole or not at all")

import argparse
import csv
import io
import json
import sys
from pathlib import Path

import yaml

from nmt.atomic import atomic_write
from nmt.cli_checks import ArgumentParser, check_not_input, close_stdout, write_stdout
from nmt.errors import NmtError
from nmt.file_inputs import refuse_special

COLUMNS = ["parameters", "bleu", "chrf", "perplexity", "tokens_per_s", "wall_s"]


def collect_runs(sweep_dir: Path) -> list[dict]:
    if not sweep_dir.is_dir():
        raise NmtError(f"{sweep_dir} is not a folder; give the sweep folder printed by --multirun")
    runs = []
    for summary_path in sorted(sweep_dir.glob("**/summary.json")):
        run_dir = summary_path.parent
        overrides_path = run_dir / ".hydra" / "overrides.yaml"
        overrides = _read(overrides_path, yaml.safe_load) if overrides_path.exists() else []
        summary = _read(summary_path, json.loads)
        for path, good in ((overrides_path, isinstance(overrides, (list, type(None)))),
                           (summary_path, isinstance(summary, dict) and all(
                               isinstance(summary.get(k), (int, float)) for k in COLUMNS))):
            if not good:
                raise NmtError(f"{path} is not what nmt.train writes; remove that run folder or run it again")
        runs.append({"run": str(run_dir.relative_to(sweep_dir)) or ".",
                     "overrides": dict(str(o).split("=", 1) for o in overrides or [] if "=" in str(o)),
                     "files": [summary_path, overrides_path], **summary})
    if not runs:
        raise NmtError(f"no finished runs (summary.json) under {sweep_dir}")
    return runs


def _read(path: Path, parse):
    refuse_special(path, "", "remove it or that run folder")       # a FIFO would hang the read
    try:
        return parse(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise NmtError(f"cannot read {path}: {error.strerror or error}") from None
    except (ValueError, yaml.YAMLError):   # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise NmtError(f"{path} is damaged (not valid {'JSON' if path.suffix == '.json' else 'YAML'}); "
                       "remove that run folder or run it again") from None


def table_rows(runs: list[dict]) -> tuple[list[str], list[list[str]]]:
    keys = sorted({k for r in runs for k in r["overrides"]})
    differing = [k for k in keys if len({r["overrides"].get(k) for r in runs}) > 1]
    header = ["run"] + differing + COLUMNS
    rows = []
    for r in runs:
        rows.append([r["run"]] + [r["overrides"].get(k, "") for k in differing] + [
            f"{r['parameters']:,}", f"{r['bleu']:.2f}", f"{r['chrf']:.2f}", f"{r['perplexity']:.2f}",
            f"{r['tokens_per_s']:.0f}", f"{r['wall_s']:.0f}"])
    return header, rows


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m nmt.compare", description=__doc__.split("\n")[0])
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("--csv", type=Path, help="also write the table as CSV here")
    args = parser.parse_args(argv)
    try:
        if args.csv is not None and (args.csv.is_dir() or not args.csv.parent.is_dir()):
            raise NmtError(f"--csv {args.csv}: give a file in an existing folder")
        runs = collect_runs(args.sweep_dir)
        if args.csv is not None:       # a file the table was read from would be lost
            check_not_input("--csv", args.csv, [("run file", p) for r in runs for p in r["files"]])
        header, rows = table_rows(runs)
        if args.csv is not None:        # whole or not at all, before the table is printed
            table = io.StringIO(newline="")
            csv.writer(table).writerows([header] + rows)
            try:
                atomic_write(args.csv, table.getvalue().encode("utf-8"))
            except OSError as error:
                raise NmtError(f"cannot write {args.csv}: {error.strerror or error}") from None
        write_stdout(markdown(header, rows) + "\n")
    except NmtError as error:
        print(f"nmt: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(close_stdout(main()))
