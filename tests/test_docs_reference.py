"""The docs' Reference pages (docs/reference/configuration.md, commands.md,
python-api.md) are generated from the code by `python -m scripts.docs.docs_reference`
and committed as Markdown that GitHub renders. This checks that the committed
pages are what the code gives now, and what they must hold: every config key once,
with its default, allowed values and meaning; every command option in a table; the
Python API as signatures and docstrings, with no directive left for a plugin.

The config side composes the default config, every preset and every option of every
group (as tests/test_config_schema.py does) and asks, for each leaf, whether the
reference has its row; the command side asks the commands' own parsers.
"""

import argparse
import re
from pathlib import Path

import pytest
import yaml

from nmt.base.config_files import CONFIGS, group_options
from nmt.config_schema.kinds import show
from nmt.config_schema.table import RULES
from nmt.config_schema.values import as_plain, leaves
from scripts.docs.docs_commands import COMMANDS, command_name, command_parser
from scripts.docs.docs_reference import PAGES, REFERENCE, config_groups, stale_pages
from tests.test_config_schema import every_config

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    """page name -> the Markdown the code gives now (made once: composing every option takes seconds)."""
    return {name: make() for name, make in PAGES.items()}


@pytest.fixture(scope="module")
def config_page(generated) -> str:
    return generated["configuration.md"]


@pytest.fixture(scope="module")
def commands_page(generated) -> str:
    return generated["commands.md"]


def test_the_committed_pages_are_fresh(generated):
    stale = [name for name, text in generated.items() if (REFERENCE / name).read_text(encoding="utf-8") != text]
    assert not stale, f"docs/reference/{stale} are stale: run python -m scripts.docs.docs_reference"


def test_the_check_names_a_stale_page(tmp_path, generated):
    for name, text in generated.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "commands.md").write_text(generated["commands.md"].replace("--beam-size", "--beam"), encoding="utf-8")
    (tmp_path / "python-api.md").unlink()
    assert stale_pages(tmp_path) == ["commands.md", "python-api.md"]


def test_each_page_says_how_it_is_made_and_needs_no_build_step(generated):
    for name, text in generated.items():
        head = "\n".join(text.splitlines()[:3])
        assert text.startswith("# ") and "`python -m scripts.docs.docs_reference`" in head, name
        assert "<!-- generated" not in text, name
        assert not re.search(r"^::: ", text, re.MULTILINE), f"{name}: a mkdocstrings directive GitHub shows as text"


def test_every_config_key_has_one_row(config_page):
    keys = {key for cfg in every_config().values() for key, _ in leaves(as_plain(cfg))}
    assert len(keys) > 100
    rows = {key: config_page.count(f"\n| `{key}` |") for key in keys}
    assert not [key for key, n in rows.items() if n == 0], "the configuration reference has no row for them"
    # a key means the same under every option of its group: one row, with the options it comes with
    assert not [key for key, n in rows.items() if n > 1], "listed more than once"


def _row(page: str, key: str) -> list[str]:
    line = next(line for line in page.splitlines() if line.startswith(f"| `{key}` |"))
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_a_row_has_default_allowed_and_meaning_from_the_one_definition(config_page):
    # default: trainer/default.yaml; allowed and meaning: table.py's rule
    assert _row(config_page, "trainer.grad_clip") == [
        "`trainer.grad_clip`",
        "`1.0`",
        "a number >= 0 (0 turns clipping off)",
        RULES["trainer.grad_clip"].meaning,
    ]
    scope = _row(config_page, "model.attention.scope")
    assert scope[1:3] == ["`global`", "one of `global`, `local_m`, `local_p`, `hard`"]
    assert scope[3] == RULES["model.attention.scope"].meaning


def test_a_default_names_its_options_where_not_all_have_it(config_page):
    assert _row(config_page, "model.attention.window")[1] == "`5`"  # every attention: said once
    assert _row(config_page, "model.encoder.layers")[1] == "`1` (gru, lstm), `3` (transformer)"
    assert _row(config_page, "model.attention.hidden_dim")[1] == "`256` (bahdanau, coverage, luong_concat)"


def test_every_default_in_the_page_is_the_yaml_default(config_page):
    # the YAML is the one place of a default; the page shows the value an option composes to
    for name in ("trainer/default.yaml", "data/toy.yaml", "optimizer/adamw.yaml"):
        prefix = name.split("/")[0] + "."
        for key, value in leaves(yaml.safe_load((CONFIGS / name).read_text(encoding="utf-8")), prefix):
            assert f"`{show(value)}`" in _row(config_page, key)[1], key


def test_every_group_option_is_in_its_groups_table(config_page):
    assert "model/attention" in config_groups() and "experiment" in config_groups()
    for group in config_groups():
        section = config_page.split(f"\n## {group}\n", 1)[1].split("\n## ", 1)[0]
        for option in group_options(group):
            assert f"\n| `{option}` | " in section, f"{group}={option}"
    assert "\n### experiment=quickstart\n" in config_page  # a preset's file in full


def test_every_command_option_is_in_a_table(commands_page):
    assert len(COMMANDS) >= 8
    for module in COMMANDS:
        parser = command_parser(module)
        section = commands_page.split(f"\n## {command_name(module)}\n", 1)[1].split("\n## ", 1)[0]
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for name in action.option_strings or [action.dest]:
                assert re.search(rf"^\| `(.*, )?{re.escape(name)}[ `,]", section, re.MULTILINE), f"{module}: {name}"
    assert "| `--beam-size BEAM_SIZE` | `5` |" in commands_page


def test_train_lists_presets_groups_and_flags_as_tables(commands_page):
    train = commands_page.split("\n## nmt.train\n", 1)[1].split("\n## ", 1)[0]
    for option in group_options("experiment"):
        assert f"| `experiment={option}` | " in train
    assert "| `model/attention` | `luong_general` | `bahdanau`, " in train
    assert "| `--cfg job` | " in train
    assert "keys (key=value" not in train  # no --help text pasted in a code block


def test_the_python_api_page_shows_signatures_and_docstrings(generated):
    api = generated["python-api.md"]
    assert "### Translator\n" in api and "#### Translator.translate\n" in api
    assert "def translate(\n    sentences: list[str],\n    beam_size: int = 1," in api
    assert "One Translation per sentence, in order" in api  # its docstring
    assert "nbest: list[tuple[str, float]] = list()," in api  # a dataclass field's factory


def test_the_site_keeps_names_whole_and_code_blocks_scrolling():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8").replace("!!python", "#"))
    css = (ROOT / "docs" / config["extra_css"][0]).read_text(encoding="utf-8")
    table_code = css.split(".md-typeset table:not([class]) code {", 1)[1].split("}", 1)[0]
    assert "white-space: nowrap" in table_code and "word-break: keep-all" in table_code
    assert "overflow-x: auto" in css.split(".md-typeset pre > code {", 1)[1].split("}", 1)[0]
