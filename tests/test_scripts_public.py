"""The scripts use nmt as a user's code does: no private (underscored) name of
nmt is imported or reached by attribute, and each lives in its folder
(benchmarks, peers, docs) with only the shared `out_path` at the top."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"


def private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")     # `_step` is private; `__main__` is not


def private_uses(path: Path) -> list[str]:
    """`from nmt... import _name`, `import nmt._x`, and `nmt.<...>._name` attribute chains in `path`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "nmt":
            parts = node.module.split(".") + [alias.name for alias in node.names]
            found += [f"{path.name}:{node.lineno} from {node.module} import {p}" for p in parts if private(p)]
        elif isinstance(node, ast.Import):
            found += [f"{path.name}:{node.lineno} import {a.name}" for a in node.names
                      if a.name.split(".")[0] == "nmt" and any(private(p) for p in a.name.split("."))]
    return found


def test_no_script_imports_a_private_name_of_nmt():
    scripts = sorted(SCRIPTS.rglob("*.py"))
    assert len(scripts) > 30
    assert [use for path in scripts for use in private_uses(path)] == []


def test_the_check_sees_a_private_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from nmt.training.loop import _step\nimport nmt._secret\nfrom nmt_study.__main__ import cli\nfrom nmt import Translator\n")
    assert private_uses(sample) == ["sample.py:1 from nmt.training.loop import _step", "sample.py:2 import nmt._secret"]


def test_scripts_are_split_by_what_they_do():
    top = sorted(p.name for p in SCRIPTS.glob("*.py"))
    assert top == ["__init__.py", "out_path.py"]
    folders = sorted(p.name for p in SCRIPTS.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == ["benchmarks", "docs", "peers"]
    assert all(name.startswith("docs_") or name in ("screenshots.py", "ship_pretrained.py", "__init__.py")
               for name in (p.name for p in (SCRIPTS / "docs").glob("*.py")))
