"""The generated pages of the docs site's Reference, built from the code so they cannot drift:

    config_reference()    every config group, option and key: default (from nmt/configs),
                          allowed values (nmt/config_schema/table.py) and meaning (the YAML comment)
    commands_reference()  every command's options, read from its argparse parser, and
                          `python -m nmt.train --help` (nmt/train_cli.py's help page)

scripts/mkdocs_hooks.py puts them into docs/reference/*.md at build time (`mkdocs build`);
`python -m scripts.docs_reference config|commands` prints one.
"""

import argparse
import importlib
import sys
from unittest import mock

from nmt.cli_checks import ArgumentParser
from nmt.config_files import CONFIGS, group_options
from nmt.config_schema.table import RULES
from nmt.train_cli import _defaults, _header, help_page, yaml_keys

# module -> the function that builds its parser and parses argv (called with ["--help"])
COMMANDS = {
    "nmt.translate": "parse_args",
    "nmt.average": "main",
    "nmt.explore": "parse_args",
    "nmt.compare": "main",
    "nmt.export": "parse_args",
    "nmt.study.__main__": "parse_args",
    "nmt.study.eflomal_links": "main",
    "nmt.data.alignments": "main",
}
CONSOLE = {
    "nmt.translate": "nmt-translate",
    "nmt.average": "nmt-average",
    "nmt.explore": "nmt-explore",
    "nmt.compare": "nmt-compare",
    "nmt.export": "nmt-export",
    "nmt.study": "nmt-study",
}


def command_name(module: str) -> str:
    """How a user types the command: nmt.study.__main__ is `python -m nmt.study`."""
    return module.removesuffix(".__main__")


def _code(text) -> str:
    """Text safe inside a code span of a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def _cell(text) -> str:
    """Prose safe inside a Markdown table cell: no pipe, no [link] syntax."""
    return _code(text).replace("[", "\\[")


def allowed(key: str) -> str:
    """What RULES lets `key` hold, e.g. "a number >= 0 (0 turns clipping off)"; "" without a rule."""
    rule = RULES.get(key)
    if rule is None:
        return ""
    text = rule.expected() + (", or null" if rule.null else "")
    return text + (f" ({rule.hint})" if rule.hint else "")


def config_groups() -> list[str]:
    """Every config group below nmt/configs (hydra's own left out), sorted."""
    folders = {p.parent.relative_to(CONFIGS).as_posix() for p in CONFIGS.rglob("*.yaml") if p.parent != CONFIGS}
    return sorted(f for f in folders if not f.startswith("hydra"))


def _key_table(rows: list[tuple[str, str, str]]) -> list[str]:
    lines = ["| key | default | allowed | meaning |", "| --- | --- | --- | --- |"]
    for key, value, comment in rows:
        lines.append(f"| `{key}` | `{_code(value)}` | {_cell(allowed(key))} | {_cell(comment)} |")
    return lines


def _group_section(group: str, chosen: dict[str, str]) -> list[str]:
    prefix = group.replace("/", ".") + "."
    default = chosen.get(group)
    out = [
        f"## {group}",
        "",
        f"Choose with `{group}=OPTION`; the default is `{default}`."
        if default
        else f"Choose with `{group}=OPTION` (none by default).",
        "",
    ]
    for option in group_options(group):
        path = CONFIGS / group / f"{option}.yaml"
        out += [f"### {group}={option}", ""]
        about = _header(path)
        if about:
            out += [about, ""]
        if group == "experiment":  # a preset sets keys of several groups: its file says it best
            out += [
                f"`nmt/configs/{group}/{option}.yaml`:",
                "",
                "```yaml",
                path.read_text(encoding="utf-8").strip(),
                "```",
                "",
            ]
            continue
        rows = yaml_keys(path, prefix)
        out += (_key_table(rows) if rows else ["(no keys of its own)"]) + [""]
    return out


def config_reference() -> str:
    """Markdown: the top-level keys, then each group with each option and its keys."""
    chosen = _defaults()
    out = [
        "Every group, option and key of `python -m nmt.train`, read from `nmt/configs/` (defaults and",
        "comments) and `nmt/config_schema/table.py` (allowed values) when the site is built.",
        "",
        "## Top level",
        "",
        "Keys of `nmt/configs/config.yaml`:",
        "",
    ]
    out += _key_table(yaml_keys(CONFIGS / "config.yaml")) + [""]
    for group in config_groups():
        out += _group_section(group, chosen)
    return "\n".join(out) + "\n"


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


def _default(action) -> str:
    if action.required or action.default in (None, argparse.SUPPRESS) or action.nargs == 0:
        return ""
    return f"`{_code(action.default)}`"


def option_rows(parser: argparse.ArgumentParser) -> list[str]:
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
        lines.append(f"| `{_code(names)}` | {_default(action)} | {_cell(meaning)} |")
    return lines


def commands_reference() -> str:
    """Markdown: nmt.train's help page, then each other command's usage and options."""
    out = [
        "Every command's options, read from the commands' own parsers when the site is built.",
        "",
        "## nmt.train",
        "",
        "`python -m nmt.train` (also `nmt-train`) takes Hydra overrides: `group=option` and",
        "`key=value` ([configuration reference](configuration.md)), and Hydra's flags (`--multirun`, `--cfg job`,",
        "`--info`, `--hydra-help`). Its `--help`:",
        "",
        "```text",
        help_page().rstrip(),
        "```",
        "",
    ]
    for module in COMMANDS:
        parser = command_parser(module)
        name = command_name(module)
        console = f" (also `{CONSOLE[name]}`)" if name in CONSOLE else ""
        out += [
            f"## {name}",
            "",
            f"`python -m {name}`{console}: {_cell(parser.description or '')}",
            "",
            "```text",
            parser.format_usage().strip(),
            "```",
            "",
        ]
        out += option_rows(parser) + [""]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="print a generated reference page as Markdown")
    parser.add_argument("page", choices=["config", "commands"])
    args = parser.parse_args(argv)
    sys.stdout.write(config_reference() if args.page == "config" else commands_reference())
    return 0


if __name__ == "__main__":
    sys.exit(main())
