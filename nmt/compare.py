"""python -m nmt.compare SWEEP_DIR: one table of every run of a sweep.

Reads each run folder's `.hydra/overrides.yaml` and `summary.json` and prints
the overrides that differ between runs, parameters, BLEU, chrF, perplexity,
tokens/s and wall time, as Markdown; `--csv FILE` also writes CSV.
"""

import argparse
import csv
import json
import sys
from pathlib import Path

import yaml

from nmt.errors import NmtError

COLUMNS = ["parameters", "bleu", "chrf", "perplexity", "tokens_per_s", "wall_s"]


def collect_runs(sweep_dir: Path) -> list[dict]:
    if not sweep_dir.is_dir():
        raise NmtError(f"{sweep_dir} is not a folder; give the sweep folder printed by --multirun")
    runs = []
    for summary_path in sorted(sweep_dir.glob("**/summary.json")):
        run_dir = summary_path.parent
        overrides_path = run_dir / ".hydra" / "overrides.yaml"
        overrides = yaml.safe_load(overrides_path.read_text()) if overrides_path.exists() else []
        summary = json.loads(summary_path.read_text())
        runs.append({"run": str(run_dir.relative_to(sweep_dir)) or ".",
                     "overrides": dict(o.split("=", 1) for o in overrides or [] if "=" in o),
                     **summary})
    if not runs:
        raise NmtError(f"no finished runs (summary.json) under {sweep_dir}")
    return runs


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
    parser = argparse.ArgumentParser(prog="python -m nmt.compare", description=__doc__.split("\n")[0])
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("--csv", type=Path, help="also write the table as CSV here")
    args = parser.parse_args(argv)
    try:
        header, rows = table_rows(collect_runs(args.sweep_dir))
    except NmtError as error:
        print(f"nmt: error: {error}", file=sys.stderr)
        return 1
    print(markdown(header, rows))
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows([header] + rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
