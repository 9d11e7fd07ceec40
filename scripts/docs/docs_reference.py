"""The docs' Reference pages, generated from the code and committed as Markdown that
GitHub and the docs site render alike, so they cannot drift from it:

    docs/reference/configuration.md  every config group, option and key: its default
                                     (nmt/configs), allowed values and meaning
                                     (nmt/config_schema/table.py)
    docs/reference/commands.md       every command's options, read from its argparse
                                     parser (scripts/docs/docs_commands.py)
    docs/reference/python-api.md     the public API's signatures and docstrings
                                     (scripts/docs/docs_api.py)

    python -m scripts.docs.docs_reference          writes the three pages
    python -m scripts.docs.docs_reference --check  exit status 1 naming each page that is stale

tests/test_docs_reference.py runs the check, so a key, an option or a docstring changed
without the pages fails the suite.
"""

import argparse
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir

from nmt.base.config_files import CONFIGS, group_options
from nmt.config_schema.kinds import Choice, show
from nmt.config_schema.table import RULES
from nmt.config_schema.values import as_plain, leaves
from nmt.commands.train_checks import default_options, yaml_header_lines, yaml_keys
from scripts.docs.docs_api import api_reference
from scripts.docs.docs_commands import commands_reference
from scripts.docs.docs_markdown import cell, code, generated_note, prose

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"

CONFIG_INTRO = """\
`python -m nmt.train` is configured with Hydra: `group=option` chooses a part
(`model/attention=bahdanau`), `key=value` sets a key (`trainer.max_steps=500`),
`--cfg job` prints the composed config of a command line. A key belongs to the
options that set it: `model.attention.window` exists with every `model/attention`
option, `model.positional.base` only with `model/positional=rotary` and `sinusoidal`;
each group's table lists a key once, its default followed by the options it comes
with where not every option of the group has it.

Values are checked before any data is read; a value outside its range is one
line, `nmt: error: trainer.grad_clip=-1: must be >= 0 (0 turns clipping off)`.
Paths with spaces or non-ASCII characters are quoted as in
[Troubleshooting](../troubleshooting.md#a-path-with-spaces-or-non-ascii-characters).
"""


def allowed(key: str) -> str:
    """What RULES lets `key` hold, as Markdown, e.g. "a number >= 0 (0 turns clipping off)"."""
    rule = RULES[key]
    if isinstance(rule, Choice):
        words = [code(o) for o in rule.options] + [code(p + "N") for p in rule.prefixes]
        text = "one of " + ", ".join(words)
    else:
        text = prose(rule.expected())
    text += ", or null" if rule.null else ""
    return text + (f" ({cell(rule.hint)})" if rule.hint else "")


def config_groups() -> list[str]:
    """Every config group below nmt/configs (hydra's own left out), sorted."""
    folders = {p.parent.relative_to(CONFIGS).as_posix() for p in CONFIGS.rglob("*.yaml") if p.parent != CONFIGS}
    return sorted(f for f in folders if not f.startswith("hydra"))


def option_keys(group: str) -> dict[str, dict[str, object]]:
    """option -> {dotted key: default} of the group's node, each option composed
    (its own keys and those it inherits, interpolations resolved)."""
    found = {}
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        for option in group_options(group):
            node = as_plain(compose("config", overrides=[f"{group}={option}"]))
            for part in group.split("/"):
                node = node[part]
            found[option] = dict(leaves(node, group.replace("/", ".") + "."))
    return found


def _defaults_cell(values: dict[str, object], options: list[str]) -> str:
    """The default, and the options it comes with where that is not every option of the
    group: `5`; `256` (bahdanau, coverage, luong_concat); `1` (gru, lstm), `3` (transformer)."""
    by_value: dict[str, list[str]] = {}
    for option, value in values.items():
        by_value.setdefault(show(value), []).append(option)
    if len(by_value) == 1 and len(values) == len(options):
        return code(next(iter(by_value)))
    return ", ".join(f"{code(value)} ({', '.join(where)})" for value, where in by_value.items())


def _key_rows(per_option: dict[str, dict[str, object]]) -> list[str]:
    """| key | default | allowed | meaning |, a key once however many options set it."""
    options = list(per_option)
    keys = list(dict.fromkeys(key for found in per_option.values() for key in found))
    lines = ["| key | default | allowed | meaning |", "| --- | --- | --- | --- |"]
    for key in keys:
        values = {o: found[key] for o, found in per_option.items() if key in found}
        row = [code(key), _defaults_cell(values, options), allowed(key), cell(RULES[key].meaning)]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def _options_table(group: str) -> list[str]:
    """The options of a group and what each is (its file's first comment lines); a line
    that most options' files start with is said once, above the table."""
    headers = {o: yaml_header_lines(CONFIGS / group / f"{o}.yaml") for o in group_options(group)}
    shared = [
        line
        for line in dict.fromkeys(sum(headers.values(), []))
        if len(headers) > 2 and sum(line in h for h in headers.values()) > len(headers) / 2
    ]
    out = []
    for line in shared:
        without = [code(o) for o, h in headers.items() if line not in h]
        out += [(f"Every option but {', '.join(without)}: " if without else "Every option: ") + cell(line), ""]
    out += ["| option | what it is |", "| --- | --- |"]
    for option, lines in headers.items():
        out.append(f"| {code(option)} | {cell(' '.join(line for line in lines if line not in shared))} |")
    return out + [""]


def _experiment_section() -> list[str]:
    """A preset sets keys of several groups: its file says it best."""
    out = []
    for option in group_options("experiment"):
        path = CONFIGS / "experiment" / f"{option}.yaml"
        out += [f"### experiment={option}", "", f"`nmt/configs/experiment/{option}.yaml`:", "", "```yaml"]
        out += [path.read_text(encoding="utf-8").strip(), "```", ""]
    return out


def _group_section(group: str, chosen: dict[str, str]) -> list[str]:
    default = chosen.get(group)
    out = [f"## {group}", ""]
    out.append(
        f"Choose with `{group}=OPTION`; the default is `{default}`."
        if default
        else f"Choose with `{group}=OPTION` (none by default)."
    )
    out += [""] + _options_table(group)
    if group == "experiment":
        return out + _experiment_section()
    per_option = option_keys(group)
    if not any(per_option.values()):
        return out + ["(no keys)", ""]
    return out + _key_rows(per_option) + [""]


def config_reference() -> str:
    """Markdown: the top-level keys, then each group with its options and its keys."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        plain = dict(leaves({k: v for k, v in as_plain(compose("config")).items() if k != "hydra"}))
    top = {key: plain[key] for key, _, _ in yaml_keys(CONFIGS / "config.yaml")}
    sources = "`nmt/configs/` (defaults) and `nmt/config_schema/table.py` (allowed values, meanings)"
    out = [
        "# Configuration reference",
        "",
        generated_note(sources),
        "",
        CONFIG_INTRO,
        "## Top level",
        "",
        "Keys of `nmt/configs/config.yaml`:",
        "",
    ]
    out += _key_rows({"config": top}) + [""]
    chosen = default_options()
    for group in config_groups():
        out += _group_section(group, chosen)
    return "\n".join(out).rstrip() + "\n"


PAGES = {"configuration.md": config_reference, "commands.md": commands_reference, "python-api.md": api_reference}


def stale_pages(folder: Path = REFERENCE) -> list[str]:
    """The pages in `folder` whose text is not what the code generates now."""
    return [
        name
        for name, make in PAGES.items()
        if not (folder / name).is_file() or (folder / name).read_text(encoding="utf-8") != make()
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="write (or --check) the generated pages of docs/reference/")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale page")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_pages()
        for name in stale:
            print(f"docs/reference/{name} is stale: run python -m scripts.docs.docs_reference", file=sys.stderr)
        return 1 if stale else 0
    for name, make in PAGES.items():
        (REFERENCE / name).write_text(make(), encoding="utf-8")
        print(f"wrote docs/reference/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
