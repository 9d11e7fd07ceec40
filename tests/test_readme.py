"""README.md is a front page: at most 150 lines, its links resolve, and every command in
it runs (tests/docs_commands.py: in an empty folder, training at tiny sizes).

The set-up steps of its two commands (a venv, `pip install ...`) are not run again here:
.ci/run runs exactly them on a clean clone before the tests, so they are checked to be
the ones .ci/run runs; and the test command itself, `python -m pytest`, is what .ci/run
ends with (running it here would run this test again).
"""

import re
from pathlib import Path

from tests.docs_commands import page_commands, run_page

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
SETUP = re.compile(r"^(python3 -m venv \.venv|\. \.venv/bin/activate|pip install .+)$")


def ci_extras() -> set[str]:
    """The extras .ci/run installs: pip install ... -e ".[a,b]"."""
    return {e for line in re.findall(r'pip install .*-e "\.\[([a-z,]+)\]"', CI) for e in line.split(",")}


def without_setup(command: str) -> str:
    """The command less the set-up steps of a `&&` chain, each checked against .ci/run."""
    kept = []
    for part in command.split(" && "):
        if not SETUP.match(part):
            kept.append(part)
        elif part.startswith("pip install torch"):
            assert part in CI.replace("pip install --quiet ", "pip install "), (
                f"{part!r}: .ci/run installs another torch"
            )
        elif part.startswith("pip install"):
            wanted = re.search(r'-e "?\.(\[([a-z,]+)\])?"?$', part)
            assert wanted, f"{part!r}: not an install of this checkout"
            assert set((wanted.group(2) or "").split(",")) - {""} <= ci_extras(), f"{part!r}: .ci/run lacks an extra"
    return " && ".join(kept)


def test_readme_is_a_front_page_of_at_most_150_lines():
    assert len(README.splitlines()) <= 150
    assert "python -m scripts." not in README  # package users have no scripts/


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    assert len(links) > 15
    missing = [link for link in links if not link.startswith("http") and not (ROOT / link).exists()]
    assert not missing


def test_the_test_command_is_what_ci_runs():
    commands = page_commands(README)
    test_command = next(c for c in commands if c.endswith("python -m pytest"))
    assert without_setup(test_command) == "python -m pytest"
    assert CI.rstrip().splitlines()[-1] == "python -m pytest"


def test_every_readme_command_runs(tmp_path, cache_dir):
    commands = [without_setup(c) for c in page_commands(README) if not c.endswith("python -m pytest")]
    assert "python -m nmt.train experiment=quickstart" in commands
    assert any("model/positional=rotary" in c for c in commands)
    assert any("experiment=rnn_luong_local_p" in c for c in commands)
    assert any("--beam-size 5 --input test.de" in c for c in commands)
    assert any("trainer.device=auto" in c for c in commands)
    assert "mkdocs serve" in commands
    run_page(commands, tmp_path, cache_dir)
    assert (tmp_path / "test.en").read_text(encoding="utf-8").count("\n") == 2
    assert list((tmp_path / "pictures").glob("*.png"))
    assert (tmp_path / "dog.png").stat().st_size > 1000
    assert (tmp_path / "site" / "index.html").is_file()
    assert len(list((tmp_path / "outputs").glob("*/*/summary.json"))) == 4
