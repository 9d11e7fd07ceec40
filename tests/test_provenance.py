"""nmt.provenance.git_commit: the one place a record's commit comes from, and
scripts that import each other as a package, without sys.path edits."""

import ast
import re

from nmt import provenance
from tests.helpers import ROOT


def test_git_commit_names_the_checkout_head_or_unknown_outside_git(tmp_path, monkeypatch):
    commit = provenance.git_commit()
    assert re.fullmatch(r"[0-9a-f]{12}( \(with uncommitted changes under nmt/ or configs/\))?", commit), commit
    monkeypatch.setattr(provenance, "CHECKOUT", tmp_path)           # a folder outside any checkout
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert provenance.git_commit() == "unknown"
    monkeypatch.setenv("NMT_COMMIT", "not a hash")
    assert provenance.git_commit() == "unknown"
    monkeypatch.setenv("NMT_COMMIT", "3018C098E8561234abcd")    # a copy sent without its .git
    assert provenance.git_commit() == "3018c098e856 (stated by NMT_COMMIT: a copy without git history)"
    monkeypatch.setattr(provenance, "CHECKOUT", ROOT)              # where git answers, its answer wins
    assert provenance.git_commit() == commit


def test_git_commit_is_defined_once_and_scripts_edit_no_import_path():
    defined, path_edits = [], []
    for path in sorted([*ROOT.joinpath("nmt").rglob("*.py"), *ROOT.joinpath("scripts").glob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = path.relative_to(ROOT).as_posix()
        defined += [name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "git_commit"]
        if name.startswith("scripts/") and "sys.path.insert" in path.read_text(encoding="utf-8"):
            path_edits.append(name)
    assert defined == ["nmt/provenance.py"]
    assert not path_edits, f"import scripts as the package `scripts` instead: {path_edits}"
