"""Which commit produced each record, and does a rerun at the final commit
reproduce it?

Every record names the commit of the tree that trained it (`commit`, with a
note when nmt/ or configs/ had uncommitted changes). The report lists the
commits with their record counts and flags every record not from the
commit most records come from. `python -m nmt_study --reproduce NAME:SEED,...`
trains those runs again at the current commit into OUT/reproduce/records;
`reproduction_lines` compares each with its original, figure by figure,
within float noise (`TOLERANCE`). `equivalence_lines` reads
OUT/commit_equivalence/*.json (scripts/benchmarks/commit_equivalence.py: one record's
run trained from its own overrides at several commits on one processor) and
says, for the records not from the main commit, why, and whether their
commit and the final one train them alike.
"""

import json

from collections import Counter
from pathlib import Path

from nmt import git_environment
from nmt_study.runner import read_record, record_path_of

# the largest difference read as float noise, per figure (updates must be equal)
TOLERANCE = {"best_step": 0, "final_step": 0, "valid_bleu": 0.01, "test_bleu": 0.01, "test_chrf": 0.01,
             "aer": 0.001, "entropy": 0.001}
REPRODUCE = "reproduce"


def commit_lines(runs: list[dict]) -> list[str]:
    """Markdown: the commits of the finished records, and the records flagged."""
    finished = [r for r in runs if r["eval"] is not None]
    if not finished:
        return []
    counts = Counter(r.get("commit") or "unknown" for r in finished)
    main, _ = counts.most_common(1)[0]
    listed = "; ".join(f"`{commit}`: {n} record{'s' * (n != 1)}" for commit, n in counts.most_common())
    flagged = sorted(f"{r['name']} seed {r['seed']} (`{r.get('commit') or 'unknown'}`)" for r in finished
                     if (r.get("commit") or "unknown") != main)
    dirty = [c for c in counts if "uncommitted" in c]
    later = sorted({r["name"] for r in finished if (r.get("commit") or "unknown") != main})
    when = training_order({r.get("commit") or "unknown" for r in finished} - {main}, main)
    why = (f" Why: {', '.join(later)} {'was' if len(later) == 1 else 'were'} trained {when}, at "
           "the commit named; the commit equivalence below says whether that commit and the final one "
           f"train the same runs as `{main}` does, on the processor and for the updates it names.") \
        if later and not dirty else ""
    return ["", "## Provenance", "", f"Commits of the {len(finished)} finished records: {listed}.",
            ("Every record comes from one commit." if len(counts) == 1 else
             f"Not from `{main}`: {', '.join(flagged)}.{why}")
            + (" Trained from a tree with uncommitted changes: flagged above." if dirty else "")]


def training_order(others: set[str], main: str) -> str:
    """Where the other commits stand in history against `main`: "before the other rows'
    commit", "after …", or "at other commits" (git's commit dates; unknown: the last)."""
    import subprocess

    def date(commit: str) -> str:
        done = subprocess.run(["git", "show", "-s", "--format=%cI", commit.split(" ")[0]],
                              capture_output=True, text=True, cwd=Path(__file__).resolve().parent,
                              env=git_environment())
        return done.stdout.strip()

    mine, theirs = date(main), [date(c) for c in others]
    if mine and theirs and all(theirs) and all(t < mine for t in theirs):
        return "at an earlier commit than the other rows' (their code predates the final one)"
    if mine and theirs and all(theirs) and all(t > mine for t in theirs):
        return "at a later commit than the other rows'"
    return "at another commit than the other rows'"


def equivalence_lines(out_dir) -> list[str]:
    """Markdown: each commit-equivalence check of OUT/commit_equivalence/*.json, one line."""
    checks = [json.loads(p.read_text(encoding="utf-8"))
              for p in sorted(Path(out_dir, "commit_equivalence").glob("*.json"))]
    if not checks:
        return []
    lines = ["", "## Commit equivalence", "",
             "A record's run trained again from its own overrides at several commits, one after the other on one "
             "processor, by `scripts/benchmarks/commit_equivalence.py`: equal weights (every tensor of best.pt) "
             "and an equal validation say that the commits train that run alike on that processor. It says nothing"
             " of another processor, nor of the updates past the check's, so these runs are not the records' own "
             "figures: each line names the processor and the updates it checked.", ""]
    for check in checks:
        commits = ", ".join(f"`{r['resolved']}`" for r in check["runs"])
        verdict = ("equal weights and validation at every commit" if check["all_equal"] else
                   "differs at " + ", ".join(f"`{r['resolved']}`" for r in check["runs"]
                                             if not (r["same_weights_as_first"] and r["same_validation_as_first"])))
        lines.append(f"- {check['record']} seed {check['seed']}, {check['steps']} updates, at {commits} "
                     f"({check['cpu']}, {check['date']}): **{verdict}** (validation BLEU "
                     f"{check['runs'][0]['validation']['bleu']:.2f}).")
    return lines


def same_processor(original: dict, rerun: dict) -> bool:
    """Whether a rerun trained on the processor its original did (a record without one
    predates the field: taken as the same)."""
    return original.get("cpu") is None or rerun.get("cpu") is None or original["cpu"] == rerun["cpu"]


def rerun_done(rerun: dict | None, original: dict | None, commit: str, cpu: str) -> bool:
    """A --reproduce rerun that stands: finished at `commit`, on this processor or on its
    original's (that one is kept even where this machine differs; a rerun on a third
    processor is trained again here)."""
    if not rerun or rerun.get("status") != "finished" or rerun.get("commit") != commit:
        return False
    return rerun.get("cpu") in (cpu, None) or same_processor(original or {}, rerun)


def compare_records(original: dict, rerun: dict) -> list[tuple[str, float, float, bool]]:
    """(figure, original, rerun, within tolerance) for each figure both have."""
    a, b = original.get("eval") or {}, rerun.get("eval") or {}
    return [(key, a[key], b[key], abs(a[key] - b[key]) <= tolerance)
            for key, tolerance in TOLERANCE.items() if a.get(key) is not None and b.get(key) is not None]


def reproduction_lines(out_dir: Path) -> list[str]:
    """Markdown: each rerun record of OUT/reproduce against its original."""
    folder = Path(out_dir) / REPRODUCE / "records"
    out = ["", "## Reproduction at the final commit", "",
           "A sample of runs trained again at the final commit (`python -m nmt_study --reproduce NAME:SEED,...` "
           "with this part's options; records in `reproduce/records`), each figure against its original: "
           "updates equal, BLEU and chrF within 0.01, AER and entropy within 0.001. That holds on the "
           "original's processor; on another one (other vector units, so floating-point sums in another "
           "order) training takes another path, and the row says how far each figure moved instead."]
    paths = sorted(folder.glob("*/seed*.json")) if folder.is_dir() else []
    rows = []
    for path in paths:
        rerun, name, seed = read_record(path), path.parent.name, int(path.stem[4:])
        original = read_record(record_path_of(out_dir, name, seed))
        if not rerun or rerun.get("status") != "finished" or not original:
            rows.append(f"| {name} | {seed} | – | – | not comparable (rerun or original missing or failed) |")
            continue
        figures = compare_records(original, rerun)
        worst = [f"{k} {x:.4g} → {y:.4g}" for k, x, y, ok in figures if not ok]
        cells = f"| {name} | {seed} | `{original.get('commit')}` | `{rerun.get('commit')}` | "
        if not same_processor(original, rerun):
            rows.append(cells + f"another processor ({rerun.get('cpu', 'unknown')}; the original: "
                        f"{original.get('cpu', 'unknown')}), not comparable bit for bit: "
                        + ", ".join(f"{k} {x:.4g} → {y:.4g}" for k, x, y, _ in figures) + " |")
            continue
        rows.append(cells + ("reproduces: " + ", ".join(f"{k} {y:.4g}" for k, _, y, _ in figures[:4])
                             if not worst else "differs: " + ", ".join(worst)) + " |")
    if not rows:
        return out + ["", "Not run yet."]
    return out + ["", "| configuration | seed | original commit | rerun commit | figures |", "|---|---|---|---|---|",
                  *rows]
