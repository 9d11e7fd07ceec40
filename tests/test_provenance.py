"""nmt.base.provenance.git_commit: the one place a record's commit comes from, and
scripts that import each other as a package, without sys.path edits."""

import ast
import re

from nmt.base import provenance
from tests.helpers import ROOT


def test_git_commit_names_the_checkout_head_or_unknown_outside_git(tmp_path, monkeypatch):
    assert provenance.CHECKOUT == ROOT                              # the folder that holds nmt/, not nmt/ itself
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


def test_the_study_notes_changes_to_its_own_code_too(tmp_path, monkeypatch):
    """nmt's commit notes changes under nmt/ and configs/; the study, a package beside nmt
    whose code measures every figure, names its folder as well (nmt_study.runner.CODE)."""
    from nmt_study.runner import CODE
    from tests.study.git_repos import git, new_repo

    checkout = new_repo(tmp_path)
    for folder in ("nmt", "nmt_study", "configs"):
        (checkout / folder).mkdir()
        (checkout / folder / "x.py").write_text("1\n")
    git(checkout, "add", ".")
    git(checkout, "commit", "--quiet", "-m", "code")
    head = git(checkout, "rev-parse", "--short=12", "HEAD").strip()
    monkeypatch.setattr(provenance, "CHECKOUT", checkout)
    (checkout / "nmt_study" / "x.py").write_text("2\n")
    assert provenance.git_commit() == head                       # nmt's own code is as committed
    assert provenance.git_commit(CODE) == f"{head} (with uncommitted changes under nmt/, nmt_study/ or configs/)"
    (checkout / "nmt_study" / "x.py").write_text("1\n")
    (checkout / "configs" / "x.py").write_text("2\n")
    assert provenance.git_commit() == f"{head} (with uncommitted changes under nmt/ or configs/)"
    assert provenance.git_commit(("nmt",)) == head


def test_git_commit_is_defined_once_and_scripts_edit_no_import_path():
    defined, path_edits = [], []
    for path in sorted([*ROOT.joinpath("nmt").rglob("*.py"), *ROOT.joinpath("scripts").glob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = path.relative_to(ROOT).as_posix()
        defined += [name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "git_commit"]
        if name.startswith("scripts/") and "sys.path.insert" in path.read_text(encoding="utf-8"):
            path_edits.append(name)
    assert defined == ["nmt/base/provenance.py"]
    assert not path_edits, f"import scripts as the package `scripts` instead: {path_edits}"


def test_git_commit_is_asked_of_the_code_checkout_not_of_the_folder_a_study_started_in(tmp_path, monkeypatch):
    """A study started in another repository, or with GIT_DIR pointing at one, stamps
    the commit of the code that runs; a copy of nmt inside another repository (not its
    top level) is not that repository's code."""
    from tests.study.git_repos import git, new_repo

    ours = git(ROOT, "rev-parse", "--short=12", "HEAD").strip()
    (tmp_path / "other").mkdir()
    other = new_repo(tmp_path / "other")
    git(other, "commit", "--quiet", "--allow-empty", "-m", "another project")
    theirs = git(other, "rev-parse", "--short=12", "HEAD").strip()
    monkeypatch.chdir(other)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert provenance.git_commit().split(" ")[0] == ours != theirs
    inside = other / "site-packages"                 # nmt installed into a folder of another repository
    inside.mkdir()
    monkeypatch.setattr(provenance, "CHECKOUT", inside)
    assert provenance.git_commit() == "unknown"


def test_the_study_trains_with_its_own_code_not_a_checkout_in_the_folder_it_started_in(tmp_path, monkeypatch):
    import os
    import subprocess

    from nmt_study import runner
    from nmt_study.configs import study_configs

    fake = tmp_path / "nmt"                          # another nmt where the study was started
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "train.py").write_text("print('the wrong nmt')\n")
    config = next(c for c in study_configs("toy") if c.name == "luong_dot")
    command = runner.train_command(config, 1, tmp_path / "run", ["data=toy"])
    env = runner.code_environment({**os.environ, "PYTHONPATH": ""})
    done = subprocess.run([*command[:4], "--help"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "the wrong nmt" not in done.stdout
    assert done.stdout.startswith("usage: python -m nmt.train")
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)
