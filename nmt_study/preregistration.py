"""The pre-registered confirmation (issue 59): a plan committed before its runs.

The plan is data, `benchmarks/attention_study/preregistered/plan.json`: its
rows, fresh seeds, the training and stopping rule, the test sets, the
comparisons and their Holm families, the decision rule and the power
calculation behind the seed count. This module reads it and holds the one
rule that makes it a pre-registration:

    the last commit that changed plan.json is an ancestor of the commit
    that trained every record it scores

(`git merge-base --is-ancestor`). `python -m nmt_study --preregistered`
refuses to train while plan.json differs from its last commit, and refuses
to score a record trained at a commit that does not descend from the plan's.
"""

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from nmt import NmtError, git_environment

PREREGISTERED_FOLDER = "preregistered"     # OUT/../preregistered: the plan, its records and its report
PLAN_FILE = "plan.json"


@dataclass(frozen=True)
class Family:
    """One Holm family: its name, the question it answers and its (a, b) comparisons."""
    name: str
    question: str
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Plan:
    """plan.json, read and checked."""
    path: Path
    rows: dict[str, dict]             # name -> {"grid": grid configuration, "add": [overrides], "why": text}
    seeds: tuple[int, ...]
    training: tuple[str, ...]         # overrides every row trains with (the schedule among them)
    drop: tuple[str, ...]             # override prefixes of the grid rows that the training rule replaces
    cap_steps: int
    patience: int
    val_every: int
    val_sentences: int
    primary: str                      # the test set the decisions are read on
    secondary: str
    families: tuple[Family, ...]
    alpha: float
    margin: float                     # equivalence margin in BLEU (two one-sided tests at alpha)
    power: dict                       # the calculation that sized `seeds`
    minutes_per_run: float            # the plan's estimate, replaced by the finished runs' mean
    raw: dict


def plan_path(out) -> Path:
    return Path(out) / PLAN_FILE


def load_plan(out) -> Plan:
    """OUT/plan.json -> Plan, or one NmtError line naming what is wrong."""
    from nmt import refuse_special

    path = plan_path(out)
    if not path.is_file():
        raise NmtError(f"{path}: no plan; the pre-registered confirmation reads its rows, seeds and "
                       "comparisons from it (restore it from git)")
    refuse_special(path, "", "the plan is a JSON file")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        plan = Plan(path=path, rows={str(k): dict(v) for k, v in raw["rows"].items()},
                    seeds=tuple(int(s) for s in raw["seeds"]),
                    training=tuple(str(o) for o in raw["training"]["overrides"]),
                    drop=tuple(str(o) for o in raw["training"]["replaces"]),
                    cap_steps=int(raw["training"]["cap_steps"]), patience=int(raw["training"]["patience"]),
                    val_every=int(raw["training"]["val_every"]),
                    val_sentences=int(raw["training"]["val_sentences"]),
                    primary=str(raw["test_sets"]["primary"]), secondary=str(raw["test_sets"]["secondary"]),
                    families=tuple(Family(str(f["name"]), str(f["question"]),
                                          tuple((str(a), str(b)) for a, b in f["comparisons"]))
                                   for f in raw["families"]),
                    alpha=float(raw["decision"]["alpha"]), margin=float(raw["decision"]["equivalence_margin"]),
                    power=dict(raw["power"]), minutes_per_run=float(raw["cost"]["minutes_per_run"]), raw=raw)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise NmtError(f"{path}: not a readable plan ({type(error).__name__}: {error}); restore it from git") \
            from None
    unknown = sorted({n for f in plan.families for pair in f.pairs for n in pair} - set(plan.rows))
    if unknown:
        raise NmtError(f"{path}: comparisons name rows the plan does not train: {', '.join(unknown)}")
    if len(set(plan.seeds)) != len(plan.seeds) or not plan.seeds or min(plan.seeds) < 1:
        raise NmtError(f"{path}: seeds must be distinct whole numbers from 1")
    return plan


def plan_configs(plan: Plan, profile: str) -> list:
    """Each row of the plan as a StudyConfig: its grid configuration's overrides
    without those the training rule replaces, then the row's own, then the rule's."""
    from nmt_study.configs import StudyConfig, study_configs

    grid = {c.name: c for c in study_configs(profile)}
    configs = []
    for name, row in plan.rows.items():
        base = grid.get(row.get("grid"))
        if base is None:
            raise NmtError(f"{plan.path}: row {name}: grid configuration {row.get('grid')!r} unknown")
        kept = tuple(o for o in base.overrides if not o.startswith(plan.drop))
        configs.append(StudyConfig(name, base.family, kept + tuple(row.get("add", ())) + plan.training))
    return configs


def plan_runs(plan: Plan, profile: str) -> tuple[list, dict[str, list[int]]]:
    """(configurations, seeds of each) of the plan: every row with every seed."""
    configs = plan_configs(plan, profile)
    return configs, {c.name: list(plan.seeds) for c in configs}


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              env=git_environment())
    except OSError as error:
        return subprocess.CompletedProcess(args, 127, "", f"git: {error.strerror or error}")


def plan_commit(plan: Plan) -> tuple[str, str]:
    """(full hash, ISO date) of the last commit that changed plan.json, or one NmtError line."""
    folder = plan.path.parent
    done = _git(folder, "log", "-1", "--format=%H %cI", "--", plan.path.name)
    if done.returncode != 0 or not done.stdout.strip():
        raise NmtError(f"{plan.path}: not committed; commit the plan before any run "
                       "(the pre-registration is its commit)")
    commit, date = done.stdout.split()
    return commit, date


def require_committed(plan: Plan) -> tuple[str, str]:
    """Before training: the plan committed and unchanged since -> its (commit, date)."""
    found = plan_commit(plan)
    changed = _git(plan.path.parent, "status", "--porcelain", "--", plan.path.name)
    if changed.returncode != 0 or changed.stdout.strip():
        raise NmtError(f"{plan.path}: changed since its commit {found[0][:12]}; a pre-registered plan is not "
                       "edited during its runs: restore it (git checkout -- plan.json) or commit a new plan "
                       "before any run")
    return found


def descends(repo: Path, ancestor: str, commit: str) -> bool:
    """True where `ancestor` is an ancestor of (or equal to) `commit` in repo's history."""
    return _git(repo, "merge-base", "--is-ancestor", ancestor, commit).returncode == 0


def record_commit(record: dict) -> str:
    """The hash of the commit that trained a record (its note about changes dropped)."""
    return str(record.get("commit", "unknown")).split(" ")[0]


def check_records(plan: Plan, records: list[dict]) -> tuple[str, str]:
    """Before scoring: every finished record trained at a commit that descends from
    the plan's -> the plan's (commit, date); else one NmtError line listing them."""
    commit, date = plan_commit(plan)
    bad = [f"{r['name']} seed {r['seed']} ({record_commit(r)[:12]})" for r in records
           if r.get("status") == "finished" and not descends(plan.path.parent, commit, record_commit(r))]
    if bad:
        raise NmtError(f"{plan.path}: the plan's commit {commit[:12]} is not an ancestor of the commit that "
                       f"trained {', '.join(bad)}: those runs were not pre-registered; not scored")
    return commit, date
