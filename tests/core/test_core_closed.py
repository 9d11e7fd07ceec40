"""The reference core imports torch, entmax and the standard library, and
nothing else: not another module of nmt (import-linter's forbidden contract,
whose list this checks is complete), not another library."""

import ast
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:                  # Python 3.10: import-linter's own TOML reader
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "nmt" / "core"
LIBRARIES = {"torch", "entmax"}


def core_contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["type"] == "forbidden" and c["source_modules"] == ["nmt.core"])


def test_the_forbidden_contract_names_every_other_module_of_nmt():
    top = {path.stem if path.is_file() else path.name for path in (ROOT / "nmt").iterdir()
           if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()}
    assert set(core_contract()["forbidden_modules"]) == {f"nmt.{name}" for name in top - {"core"}}


def imported_roots(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.add(node.module)
    return found


def test_the_core_imports_only_torch_entmax_the_standard_library_and_itself():
    foreign = {}
    for path in CORE.rglob("*.py"):
        for module in imported_roots(path):
            root = module.split(".")[0]
            if module == "nmt.core" or module.startswith("nmt.core."):
                continue
            if root not in LIBRARIES and root not in sys.stdlib_module_names:
                foreign.setdefault(path.relative_to(CORE).as_posix(), []).append(module)
    assert not foreign


def test_every_folder_of_the_core_and_the_speedups_is_a_package():
    """setuptools' find (pyproject.toml) ships only folders with an __init__.py."""
    folders = [p for root in (CORE, ROOT / "nmt" / "speedups") for p in [root, *root.rglob("*")]
               if p.is_dir() and p.name != "__pycache__"]
    assert [p for p in folders if not (p / "__init__.py").is_file()] == []
