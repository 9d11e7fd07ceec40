"""python -m nmt.compare SWEEP_DIR: one table of every run of a sweep.

Reads each run folder's `.hydra/overrides.yaml`, `summary.json` and
`metrics.jsonl` and prints the overrides that differ between runs,
parameters, BLEU, chrF, perplexity, tokens/s and wall time, the best
validation score of the runs' `trainer.metric` and the step it was reached
at, the test scores where the runs have them, and each run's `best.pt`, as
Markdown. The row with the best score (higher BLEU or chrF, lower loss) is
marked; `--sort` puts the rows in that order; `--csv FILE` also writes CSV.
"""


import csv
import io
import json
from pathlib import Path

import yaml

from nmt.base import own_files
from nmt.base.cli import command
from nmt.base.cli_checks import ArgumentParser, check_not_input, refuse_link_loop, write_stdout
from nmt.base.run_files import check_not_run_file
from nmt.base.errors import NmtError
from nmt.base.file_inputs import refuse_special
from nmt.store.metrics_log import METRIC_SIGN, read_records

COLUMNS = ["parameters", "bleu", "chrf", "perplexity", "tokens_per_s", "wall_s"]
TEST_KEYS = ("test_bleu", "test_chrf")
MARK = "*"


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
                     "files": [summary_path, overrides_path], "best_pt": run_dir / "checkpoints" / "best.pt",
                     "records": read_records(run_dir), **summary})
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


def sweep_metric(runs: list[dict]) -> str:
    """The metric the runs chose best.pt by (trainer.metric, in summary.json); bleu for old runs."""
    metrics = {str(r.get("metric", "bleu")) for r in runs}
    if len(metrics) > 1:
        raise NmtError(f"the runs chose best.pt by different metrics ({', '.join(sorted(metrics))}); "
                       "compare runs of one trainer.metric")
    metric = metrics.pop()
    if metric not in METRIC_SIGN:
        raise NmtError(f"summary.json names metric {metric!r}; nmt.train writes one of {sorted(METRIC_SIGN)}")
    return metric


def best_score(run: dict, metric: str) -> tuple[float | None, int | None]:
    """(best validation score of `metric`, the step it was reached at) of a run:
    the first best record of metrics.jsonl, else summary.json's."""
    sign = METRIC_SIGN[metric]
    scored = [r for r in run["records"] if isinstance(r.get(metric), (int, float))]
    if scored:
        best = max(scored, key=lambda r: (sign * r[metric], -r["step"]))
        return float(best[metric]), int(best["step"])
    value = run.get("best", run.get(metric))
    return (float(value), None) if isinstance(value, (int, float)) else (None, None)


def table_rows(runs: list[dict], sort: bool = False) -> tuple[list[str], list[list[str]], str]:
    """(header, rows, a line naming the best run). The best run's first cell is MARK."""
    metric = sweep_metric(runs)
    sign = METRIC_SIGN[metric]
    keys = sorted({k for r in runs for k in r["overrides"]})
    differing = [k for k in keys if len({r["overrides"].get(k) for r in runs}) > 1]
    tests = [k for k in TEST_KEYS if any(isinstance(r.get(k), (int, float)) for r in runs)]
    scores = [best_score(r, metric) for r in runs]
    ranked = sorted(range(len(runs)), key=lambda i: (scores[i][0] is None, -sign * (scores[i][0] or 0.0), i))
    winner = ranked[0] if scores[ranked[0]][0] is not None else None
    arrow = "higher is better" if sign > 0 else "lower is better"
    header = ["best", "run"] + differing + COLUMNS + [f"best {metric}", "best step"] + tests + ["best.pt"]
    rows = []
    for i in (ranked if sort else range(len(runs))):
        r, (score, step) = runs[i], scores[i]
        rows.append([MARK if i == winner else "", r["run"]] + [r["overrides"].get(k, "") for k in differing] + [
            f"{r['parameters']:,}", f"{r['bleu']:.2f}", f"{r['chrf']:.2f}", f"{r['perplexity']:.2f}",
            f"{r['tokens_per_s']:.0f}", f"{r['wall_s']:.0f}",
            "" if score is None else f"{score:.2f}", "" if step is None else str(step)]
            + [f"{r[k]:.2f}" if isinstance(r.get(k), (int, float)) else "" for k in tests] + [str(r["best_pt"])])
    if winner is None:
        line = f"no run has a validation {metric} score"
    else:
        score, step = scores[winner]
        at = f" at step {step}" if step is not None else ""
        line = (f"{MARK} best by validation {metric} ({arrow}): run {runs[winner]['run']}, {score:.2f}{at}; "
                f"its checkpoint {runs[winner]['best_pt']}")
    return header, rows, line


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


@command
def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m nmt.compare", description=__doc__.split("\n")[0])
    parser.add_argument("sweep_dir", type=Path,
                        help="the folder of a --multirun sweep (multirun/DATE/TIME), one subfolder per run")
    parser.add_argument("--csv", type=Path, help="also write the table as CSV here")
    parser.add_argument("--overwrite", action="store_true", help="let --csv replace a file that is not its table")
    parser.add_argument("--sort", action="store_true",
                        help="rows from the best validation score of the runs' trainer.metric down")
    args = parser.parse_args(argv)
    if args.csv is not None:
        refuse_link_loop(args.csv, "--csv")
    if args.csv is not None and (args.csv.is_dir() or not args.csv.parent.is_dir()):
        raise NmtError(f"--csv {args.csv}: give a file in an existing folder")
    runs = collect_runs(args.sweep_dir)
    if args.csv is not None:       # a file the table was read from would be lost
        check_not_input("--csv", args.csv, [("run file", p) for r in runs for p in r["files"]])
        check_not_run_file("--csv", args.csv)     # any run's own file, as nmt.average and nmt.translate refuse
        own_files.check_replace(args.csv, "--csv", own_files.TABLE, args.overwrite)
    header, rows, best = table_rows(runs, sort=args.sort)
    if args.csv is not None:        # whole or not at all, before the table is printed
        table = io.StringIO(newline="")
        csv.writer(table).writerows([header] + rows)
        try:
            own_files.write(args.csv, table.getvalue().encode("utf-8"), own_files.TABLE)
        except OSError as error:
            raise NmtError(f"cannot write {args.csv}: {error.strerror or error}") from None
    write_stdout(markdown(header, rows) + "\n\n" + best + "\n")
    return 0


def cli() -> None:
    """The `nmt-compare` console command: what `python -m nmt.compare` runs."""
    from nmt.commands import run

    run("compare")
