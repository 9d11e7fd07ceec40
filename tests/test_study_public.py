"""The attention study (nmt_study) is its own package beside nmt and uses nmt as a
user's code does: `from nmt import NAME` with NAME in nmt.__all__, no module
inside nmt; nmt never imports the study (import-linter's forbidden contracts in
pyproject.toml, whose list of nmt's modules this checks is complete)."""

import ast
import subprocess
import sys
from pathlib import Path

import nmt

try:
    import tomllib
except ImportError:                  # Python 3.10: import-linter's own TOML reader
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "nmt_study"


def nmt_uses(path: Path) -> list[str]:
    """Each import of nmt in `path` that is not `from nmt import NAME` of a public NAME."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [f"{path.name}:{node.lineno} import {a.name}" for a in node.names
                      if a.name.split(".")[0] == "nmt"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "nmt":
            if node.module != "nmt":
                found.append(f"{path.name}:{node.lineno} from {node.module} import ...")
            else:
                found += [f"{path.name}:{node.lineno} from nmt import {a.name}" for a in node.names
                          if a.name not in nmt.__all__]
    return found


def test_the_study_imports_only_nmts_public_names():
    modules = sorted(STUDY.rglob("*.py"))
    assert len(modules) > 30
    assert [use for path in modules for use in nmt_uses(path)] == []


def test_the_check_sees_a_deeper_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from nmt.base.errors import NmtError\nimport nmt.train\nimport nmt\n"
                      "from nmt import NmtError, _secret\nfrom nmt import Translator\n")
    assert nmt_uses(sample) == ["sample.py:1 from nmt.base.errors import ...", "sample.py:2 import nmt.train",
                                "sample.py:3 import nmt", "sample.py:4 from nmt import _secret"]


def test_nmt_never_imports_the_study():
    found = []
    for path in sorted((ROOT / "nmt").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno}" for n in names if n.split(".")[0] == "nmt_study"]
    assert found == []


def test_the_studys_forbidden_contract_names_every_module_of_nmt():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"]
                    if c["type"] == "forbidden" and c["source_modules"] == ["nmt_study"])
    top = {path.stem if path.is_file() else path.name for path in (ROOT / "nmt").iterdir()
           if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()}
    assert set(contract["forbidden_modules"]) == {f"nmt.{name}" for name in top}
    assert set(config["tool"]["importlinter"]["root_packages"]) == {"nmt", "nmt_study"}


def test_every_public_name_is_there_with_its_meaning():
    assert nmt.__all__ == sorted(nmt.PUBLIC)
    for name in nmt.__all__:
        module, attribute, meaning = nmt.PUBLIC[name]
        assert getattr(nmt, name) is getattr(sys.modules[module], attribute), name
        assert meaning and not meaning.endswith("."), name
    assert nmt.read_metrics.__name__ == "read_records"           # the run's metrics.jsonl, by a clearer name
    try:
        nmt.no_such_name
    except AttributeError as error:
        assert str(error) == "module 'nmt' has no attribute 'no_such_name'"
    else:
        raise AssertionError("nmt.no_such_name resolved")


def test_importing_nmt_or_a_public_light_name_loads_no_torch():
    code = ("import sys, nmt; from nmt import NmtError, run_command, git_commit; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('nmt', 'torch')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = eval(done.stdout)
    assert "torch" not in loaded and "nmt" in loaded
    assert all(m == "nmt" or m.startswith(("nmt.base", "nmt.core")) for m in loaded), loaded
