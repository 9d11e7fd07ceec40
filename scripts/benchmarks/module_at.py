"""A module's source as it was at an earlier commit, imported apart from today's nmt:
how a benchmark times the code before a change against the code after it in one process."""

import importlib.util
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def module_at(command: str, revision: str, *paths: str):
    """The module at the first of `paths` (relative to the checkout) that `revision` has,
    as it was there, imported under a name of its own; one SystemExit line, `command: ` and
    git's reason, when `revision` has none of them."""
    errors = []
    for path in paths:
        done = subprocess.run(["git", "show", f"{revision}:{path}"], cwd=ROOT, capture_output=True, text=True)
        if done.returncode == 0:
            module = importlib.util.module_from_spec(importlib.util.spec_from_loader(f"before_{Path(path).stem}", None))
            exec(compile(done.stdout, f"{revision}:{path}", "exec"), module.__dict__)
            return module
        if done.stderr.strip() not in errors:
            errors.append(done.stderr.strip())
    reasons = "; ".join(" ".join(error.split()) for error in errors)
    raise SystemExit(f"{command}: git cannot show {' or '.join(paths)} at {revision}: {reasons}")
