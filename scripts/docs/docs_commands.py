"""docs/reference/commands.md (written by `python -m scripts.docs.docs_reference`): every
command's options as tables (option, default, meaning), read from the commands' own
argparse parsers; `nmt.train`'s presets, groups and Hydra flags from nmt/configs and
nmt/commands/train_checks.py."""

import argparse
import importlib
from unittest import mock

from nmt.base.cli_checks import ArgumentParser
from nmt.base.config_files import CONFIGS, group_options
from nmt.commands.train_checks import EXAMPLES, default_options, yaml_header
from scripts.docs.docs_markdown import cell, code, generated_note

# module -> the function that builds its parser and parses argv (called with ["--help"])
COMMANDS = {
    "nmt.translate": "parse_args",
    "nmt.average": "main",
    "nmt.explore": "parse_args",
    "nmt.compare": "main",
    "nmt.export": "parse_args",
    "nmt_study.__main__": "parse_args",
    "nmt_study.eflomal_links": "main",
    "nmt.data.alignments": "main",
}
CONSOLE = {
    "nmt.translate": "nmt-translate",
    "nmt.average": "nmt-average",
    "nmt.explore": "nmt-explore",
    "nmt.compare": "nmt-compare",
    "nmt.export": "nmt-export",
    "nmt_study": "nmt-study",
}
INTRO = """\
Every command is installed twice: as `python -m nmt.NAME` and as a console
command `nmt-NAME` (`nmt-train`, `nmt-translate`, `nmt-average`, `nmt-explore`,
`nmt-compare`, `nmt-export`); the attention study, its own package beside nmt,
as `python -m nmt_study` and `nmt-study`. Each one's `--help` prints the options
below. A bad option is argparse's usage and one line, exit status 2; any
other problem is one line `nmt: error: ...`, exit status 1
([Troubleshooting](../troubleshooting.md)).
"""
# Hydra's own flags that `python -m nmt.train` takes beside its overrides
HYDRA_FLAGS = [
    ("--help", "nmt's own help: presets, examples, groups and every key of the default options"),
    ("--cfg job", "print the composed config of the command line and exit; nothing is trained"),
    ("--multirun, -m", "a sweep: one run per combination of comma-separated values, in multirun/DATE/TIME/N"),
    ("--info", "Hydra's view of the config search path and the defaults list"),
    ("--hydra-help", "Hydra's own options (run folders, launchers, logging)"),
]


def command_name(module: str) -> str:
    """How a user types the command: nmt_study.__main__ is `python -m nmt_study`."""
    return module.removesuffix(".__main__")


class _Captured(Exception):
    def __init__(self, parser):
        super().__init__("parser captured")
        self.parser = parser


def command_parser(module: str) -> argparse.ArgumentParser:
    """The argparse parser `module` builds, caught when it parses, before it runs anything."""

    def capture(parser, *args, **kwargs):
        raise _Captured(parser)

    entry = getattr(importlib.import_module(module), COMMANDS[module])
    with mock.patch.object(ArgumentParser, "parse_known_args", capture):
        try:
            entry(["--help"])
        except _Captured as captured:
            return captured.parser
    raise RuntimeError(f"{module}.{COMMANDS[module]} parsed no arguments")


def usage_lines(parser: argparse.ArgumentParser, width: int = 76) -> list[str]:
    """The usage, wrapped between options at `width` (argparse wraps at the terminal's
    width, which would make the page differ from one machine to another)."""
    words, depth, current = [], 0, ""
    for char in " ".join(parser.format_usage().split()).removeprefix("usage: "):
        if char == " " and depth == 0:
            words.append(current)
            current = ""
            continue
        depth += (char in "[({") - (char in "])}")
        current += char
    lines = [words[0]]
    for word in words[1:] + [current]:
        if len(lines[-1]) + 1 + len(word) > width:
            lines.append("    " + word)
        else:
            lines[-1] += " " + word
    return lines


def _default(action) -> str:
    if action.required or action.default in (None, argparse.SUPPRESS) or action.nargs == 0:
        return ""
    return code(action.default)


def option_rows(parser: argparse.ArgumentParser) -> list[str]:
    """| option | default | meaning | for each argument and option but --help."""
    lines = ["| option | default | meaning |", "| --- | --- | --- |"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        names = ", ".join(action.option_strings) or action.dest
        if action.option_strings and action.nargs != 0:
            names += f" {action.metavar or action.dest.upper()}"
        meaning = (action.help or "").replace("%(default)s", str(action.default))
        if action.choices:
            meaning += f" (one of {', '.join(map(str, action.choices))})"
        if action.required and action.option_strings:
            meaning += " (required)"
        lines.append(f"| {code(names)} | {_default(action)} | {cell(meaning)} |")
    return lines


def train_section() -> list[str]:
    """nmt.train: what it takes, its presets, groups, examples and Hydra's flags, as tables."""
    chosen = default_options()
    out = [
        "## nmt.train",
        "",
        "`python -m nmt.train` (also `nmt-train`) trains a model. It takes Hydra overrides:",
        "`group=option` chooses a part, `key=value` sets a key (every key, its default, allowed values",
        "and meaning: the [configuration reference](configuration.md)). A run writes",
        "`outputs/DATE/TIME/` ([what a run writes](run-folder.md)) and ends by printing the commands",
        "to translate with it, see it in TensorBoard and explore it.",
        "",
        "```text",
        "python -m nmt.train [group=option ...] [key=value ...]",
        "```",
        "",
        "### Presets",
        "",
        "| preset | what it is |",
        "| --- | --- |",
    ]
    for name in group_options("experiment"):
        out.append(f"| {code('experiment=' + name)} | {cell(yaml_header(CONFIGS / 'experiment' / f'{name}.yaml'))} |")
    out += ["", "### Groups", "", "| group | default | options |", "| --- | --- | --- |"]
    groups = sorted(
        {p.parent.relative_to(CONFIGS).as_posix() for p in CONFIGS.rglob("*.yaml") if p.parent != CONFIGS}
        - {"experiment"}
    )
    for group in (g for g in groups if not g.startswith("hydra")):
        options = ", ".join(code(o) for o in group_options(group))
        out.append(f"| {code(group)} | {code(chosen.get(group, 'null'))} | {options} |")
    out += ["", "### Flags", "", "| flag | meaning |", "| --- | --- |"]
    out += [f"| {code(flag)} | {cell(meaning)} |" for flag, meaning in HYDRA_FLAGS]
    out += ["", "### Examples", "", "```bash"] + list(EXAMPLES) + ["```", ""]
    return out


def commands_reference() -> str:
    """Markdown: nmt.train, then each other command's usage and options."""
    out = ["# Commands", "", generated_note("the commands' own argument parsers"), "", INTRO]
    out += train_section()
    for module in COMMANDS:
        parser = command_parser(module)
        name = command_name(module)
        console = f" (also `{CONSOLE[name]}`)" if name in CONSOLE else ""
        out += [
            f"## {name}",
            "",
            f"`python -m {name}`{console}: {cell(parser.description or '')}",
            "",
            "```text",
            *usage_lines(parser),
            "```",
            "",
        ]
        out += option_rows(parser) + [""]
    return "\n".join(out).rstrip() + "\n"
