"""No page meant for users, and no command's --help, names a folder that exists only on the
project's own machines (the Multi30k copy beside the repository): they use the folder
`nmt-data multi30k data/multi30k` makes. The pages of the project's own work (contributing,
the benchmark records and how to rerun them) may name where those ran."""

import pytest

from tests.helpers import ROOT, run_cli

MACHINE_PATHS = ("shared/data", "../shared")
INTERNAL = {"contributing.md", "how-to/benchmarks.md", "explanation/benchmarks.md", "explanation/speed.md"}
COMMANDS = [("nmt.train", "--help"), ("nmt.translate", "--help"), ("nmt.average", "--help"),
            ("nmt.explore", "--help"), ("nmt.compare", "--help"), ("nmt_study", "--help"),
            ("nmt_study.eflomal_links", "--help"), ("nmt.export", "--help"), ("nmt.data", "--help"),
            ("nmt.data", "multi30k", "--help")]


def user_pages() -> list:
    docs = ROOT / "docs"
    pages = [p for p in sorted(docs.rglob("*.md")) if p.relative_to(docs).as_posix() not in INTERNAL]
    return [ROOT / "README.md", *pages, *sorted(docs.rglob("*.ipynb"))]


def test_the_internal_pages_exist():
    assert all((ROOT / "docs" / page).is_file() for page in INTERNAL)
    assert len(user_pages()) > 30


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_user_page_names_a_path_of_the_projects_machines(page):
    text = page.read_text(encoding="utf-8")
    found = [path for path in MACHINE_PATHS if path in text]
    assert not found, f"{page.relative_to(ROOT)} names {found}: use data/multi30k (nmt-data multi30k data/multi30k)"


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_no_help_names_a_path_of_the_projects_machines(command):
    done = run_cli(*command, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    text = done.stdout.decode()
    assert len(text) > 200
    assert not [path for path in MACHINE_PATHS if path in text]
