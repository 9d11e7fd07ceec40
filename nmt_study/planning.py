"""Which runs the study plans (configurations x seeds) and which rows its
report shows."""

from pathlib import Path

from nmt import NmtError
from nmt_study.comma_lists import comma_items
from nmt_study.configs import BUDGETS, study_configs


def plan(args, configs) -> dict[str, list[int]]:
    spread = set(comma_items(args.spread, "--spread", "give configuration names, e.g. bahdanau,luong_dot"))
    unknown = spread - {c.name for c in study_configs(args.data)}
    if unknown:
        raise NmtError(f"--spread {','.join(sorted(unknown))}: unknown configuration (see --list)")
    wanted = only_seeds(args.only_seeds) if args.only_seeds is not None else None
    budget = BUDGETS[args.data]
    # an explicit --seeds overrides the top group's; so do the checks, which fix their own seeds
    top = set(budget.top_group) if args.seeds == budget.seeds and not (args.convergence or args.confirm) else set()

    def count(config) -> int:
        name = config.decode_of or config.name                 # a decode-only row follows what it decodes
        return max(args.seeds, budget.top_seeds if name in top else 0) + (config.name in spread)

    most = max((count(c) for c in configs), default=0)
    if wanted is not None and not wanted & set(range(1, most + 1)):
        raise NmtError(f"--only-seeds {args.only_seeds}: the plan has seeds 1 to {most} (--seeds, --spread); "
                       "give some of those, e.g. 1 or 1,2")
    return {c.name: [s for s in range(1, count(c) + 1) if wanted is None or s in wanted] for c in configs}


def only_seeds(text: str) -> set[int]:
    """--only-seeds 2,3 -> {2, 3}: ASCII digits only (int() also takes "1_0")."""
    items = comma_items(text, "--only-seeds", "give seed numbers from 1, e.g. 3 or 2,3")
    if not items or not all(n.isascii() and n.isdigit() and len(n) <= 18 and int(n) >= 1 for n in items):
        raise NmtError(f"--only-seeds {text}: give seed numbers from 1, comma-separated, e.g. 3 or 2,3")
    return {int(n) for n in items}


def collect_records(out: Path, name: str) -> list[dict]:
    from nmt_study.runner import read_record

    folder = out / "records" / name
    return [r for r in (read_record(p) for p in sorted(folder.glob("seed*.json"))) if r] if folder.is_dir() else []


def report_configs(args, configs):
    """The report shows every configuration; with --only, those asked for and every
    other one with records (so a study continued with --only keeps its earlier
    rows), or with --report-only --only just those asked for."""
    if args.only is None:
        return study_configs(args.data)
    if args.report_only:
        return configs
    names = {c.name for c in configs}
    return [c for c in study_configs(args.data) if c.name in names or collect_records(args.out, c.name)]
