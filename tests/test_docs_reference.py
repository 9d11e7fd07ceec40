"""The docs site's generated Reference (scripts/docs_reference.py, put into the pages by
scripts/mkdocs_hooks.py at build time) names every config key and every command option.

The config side composes the default config, every preset and every option of every
group (as tests/test_config_schema.py does) and asks, for each leaf, whether the
reference has a row for it; the command side asks the commands' own parsers.
"""

import argparse
from pathlib import Path

import pytest
from mkdocs.config import load_config

from nmt.config_files import CONFIGS, group_options
from nmt.config_schema.values import as_plain, leaves
from scripts.docs_reference import COMMANDS, command_name, command_parser, commands_reference, config_reference
from tests.test_config_schema import every_config

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def on_page_markdown(markdown: str) -> str:
    """The hook of mkdocs.yml, loaded the way `mkdocs build` loads it."""
    hooks = load_config(str(ROOT / "mkdocs.yml"))["hooks"]
    (hook,) = hooks.values()
    return hook.on_page_markdown(markdown, page=None, config=None, files=None)


@pytest.fixture(scope="module")
def config_page() -> str:
    return config_reference()


@pytest.fixture(scope="module")
def commands_page() -> str:
    return commands_reference()


def test_every_config_key_has_a_row(config_page):
    keys = {key for cfg in every_config().values() for key, _ in leaves(as_plain(cfg))}
    assert len(keys) > 80
    missing = sorted(key for key in keys if f"| `{key}` |" not in config_page)
    assert not missing, f"the configuration reference has no row for {missing}"


def test_every_group_option_has_a_section(config_page):
    groups = sorted(
        {
            p.parent.relative_to(CONFIGS).as_posix()
            for p in CONFIGS.rglob("*.yaml")
            if p.parent != CONFIGS and not p.parent.relative_to(CONFIGS).as_posix().startswith("hydra")
        }
    )
    assert "model/attention" in groups and "experiment" in groups
    for group in groups:
        for option in group_options(group):
            assert f"### {group}={option}\n" in config_page, f"{group}={option}"


def test_a_row_has_default_range_and_meaning(config_page):
    # trainer/default.yaml: grad_clip: 1.0 # max gradient norm; 0 disables; table.py: Float(low=0, hint=...)
    assert (
        "| `trainer.grad_clip` | `1.0` | a number >= 0 (0 turns clipping off) | max gradient norm; 0 disables |"
        in config_page
    )


def test_every_command_option_is_listed(commands_page):
    assert len(COMMANDS) >= 8
    for module in COMMANDS:
        parser = command_parser(module)
        section = commands_page.split(f"## {command_name(module)}\n", 1)[1].split("\n## ", 1)[0]
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for name in action.option_strings or [action.dest]:
                assert f"`{name}" in section or f", {name}" in section, f"{module}: {name}"


def test_train_help_lists_every_group_option(commands_page):
    train = commands_page.split("## nmt.train\n", 1)[1].split("\n## ", 1)[0]
    for option in group_options("model/attention") + group_options("experiment"):
        assert option in train


def test_the_pages_hold_the_markers_the_hook_replaces():
    config = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
    commands = (DOCS / "reference" / "commands.md").read_text(encoding="utf-8")
    built = on_page_markdown(config)
    assert "<!-- generated" not in built and "| `trainer.max_steps` | `20000` |" in built
    built = on_page_markdown(commands)
    assert "<!-- generated" not in built and "`--beam-size BEAM_SIZE` | `5` |" in built
