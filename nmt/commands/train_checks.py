"""What `python -m nmt.train` checks on its command line before Hydra composes
the config and before torch is imported: a misspelt option of a group or a
misspelt key is one line with the fix (Hydra's own message advises `+key=...`,
wrong for a typo, or lists its search path), and a file that is not there is
said in a second, not after the seconds of importing torch.
"""

import difflib
import shlex
import textwrap
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.experimental.callback import Callback
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from nmt.base.cli import runnable
from nmt.base.cli_checks import write_stdout
from nmt.base.config_files import CONFIGS, group_options
from nmt.config_schema.table import RULES
from nmt.base.errors import NmtError
from nmt.base.path_names import check_name_length

LIST_KEYS = "python -m nmt.train --cfg job lists every key"
OTHER_CONFIG = ("--config-name", "-cn", "--config-path", "-cp", "--config-dir", "-cd")


def _close(word: str, choices, cutoff: float = 0.6) -> str | None:
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return found[0] if found else None


def _values(override) -> list[str]:
    """The option names an override of a group asks for (each of a sweep's)."""
    if override.is_sweep_override():
        try:
            return [str(v) for v in override.sweep_string_iterator()]
        except Exception:  # noqa: BLE001 - a range or glob sweep: Hydra expands and checks it
            return []
    value = override.value()
    return [str(value)] if isinstance(value, str) else []


def _leaf_keys(node, prefix: str = "") -> list[str]:
    keys = []
    for key, value in node.items():
        path = f"{prefix}{key}"
        keys.append(path)
        if isinstance(value, dict):
            keys += _leaf_keys(value, path + ".")
    return keys


def _check_group(override) -> bool:
    """Whether `override` names a config group; a group option that does not
    exist is NmtError with the closest option and the list."""
    group = override.key_or_group
    if not (CONFIGS / group).is_dir():
        return False
    options = group_options(group)
    if not options:                     # `model=...`: a folder of groups, not a group
        return False
    for value in _values(override):
        if value not in options and value != "null":
            _check_value_of_a_key(group, value, options)
            close = _close(value, options)
            hint = f"did you mean {close}? " if close else ""
            raise NmtError(f"{group}={value}: no such option; {hint}{group} is one of {', '.join(options)}")
    return True


def _check_value_of_a_key(group: str, value: str, options) -> None:
    """An option of a key of the group given as the group's option (`model/attention=local_p`,
    a scope; `model/attention=sparsemax`, a normaliser): NmtError naming the key to set."""
    from nmt.config_schema.kinds import Choice
    from nmt.config_schema.table import RULES

    prefix = group.replace("/", ".") + "."
    for key, rule in RULES.items():
        if key.startswith(prefix) and isinstance(rule, Choice) and value in rule.options:
            raise NmtError(f"{group}={value}: {value} is not a {group} but a value of {key}; set it with "
                           f"{key}={value}, beside any {group} ({', '.join(options)})")


def _groups() -> list[str]:
    """Every config group a command line chooses from (`data`, `model/attention`, ...)."""
    folders = [p.relative_to(CONFIGS).as_posix() for p in CONFIGS.rglob("*") if p.is_dir()]
    return sorted(g for g in folders if not g.startswith("hydra") and group_options(g))


def _check_group_spelling(override) -> None:
    """A group named as a key (`model.attention=bahdanau`) or misspelt
    (`model/atention=bahdanau`): NmtError with the command line's fix."""
    name, values = override.key_or_group, _values(override)
    shown = ",".join(values) if values else "..."
    as_group = name.replace(".", "/")
    if "." in name and as_group in _groups():
        raise NmtError(f"{name}={shown}: a config group is chosen with '/': {as_group}={shown} "
                       f"({name}.KEY=VALUE sets one of its keys; {as_group} is one of "
                       f"{', '.join(group_options(as_group))})")
    if "/" in name and name not in _groups():
        close = _close(name, _groups())
        hint = f"did you mean {close}={shown}? " if close else ""
        raise NmtError(f"{name}={shown}: no such config group; {hint}the groups are {', '.join(_groups())}")


def _check_key(cfg: dict, override) -> None:
    """A plain `key=value` whose key the composed config lacks: NmtError naming the closest key."""
    key = override.key_or_group
    node = cfg
    parts = key.split(".")
    for depth, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            break
        node = node[part]
    else:
        return
    value = override.input_line.split("=", 1)[1] if override.input_line else ""
    keys = _leaf_keys(cfg)
    parent = key.rsplit(".", 1)[0] + "." if "." in key else ""
    siblings = [k[len(parent):] for k in keys if k.startswith(parent) and "." not in k[len(parent):]]
    close = _close(parts[-1], siblings, 0.75)      # the same node's keys, by the last name
    elsewhere = [k for k in keys if not key.startswith(k + ".")]       # not the key's own parents
    close = parent + close if close else _close(key, elsewhere, 0.85)
    hint = f"; did you mean {close}?" if close else ""
    owner = cfg
    for part in parts[:depth]:
        owner = owner[part]
    if close is None and isinstance(owner, dict) and "_target_" in owner:
        target = owner["_target_"]
        raise NmtError(f"{key}={value}: not in the config of {'.'.join(parts[:depth])} ({target}); "
                       f"to pass another argument of {target}, add it with +{key}={value}")
    raise NmtError(f"{key}={value}: not a setting nmt knows{hint} ({LIST_KEYS})")


PATH_KEYS = ("hydra.run.dir", "hydra.sweep.dir", "hydra.sweep.subdir", "trainer.resume", "cache_dir", "data.path")


def check_path_lengths(overrides) -> None:
    """A path setting no file system can hold (a name over 255 bytes): one
    line before Hydra makes the folder (its OSError is a traceback)."""
    for override in overrides:
        name = override.key_or_group
        if name in PATH_KEYS or name.startswith("data.") and name.endswith(("_src", "_tgt", "_links")):
            for value in _values(override):
                if value:
                    check_name_length(value, name + "=")


def check_overrides(args: list[str]) -> None:
    """Group options and keys of the command line's overrides, against the
    shipped configs; anything this does not understand is left to Hydra."""
    if any(a.split("=", 1)[0] in OTHER_CONFIG for a in args):
        return                          # another primary config: its keys are not the shipped ones
    lines = [a for a in args if not a.startswith("-") and "=" in a]
    try:
        overrides = OverridesParser.create().parse_overrides(overrides=lines)
    except Exception:  # noqa: BLE001 - a grammar error: Hydra's message shows where
        return
    check_path_lengths(overrides)
    groups, keys = [], []
    for override in overrides:
        name = override.key_or_group
        if name.startswith("hydra") or override.package is not None or override.is_delete():
            continue
        _check_group_spelling(override)
        if _check_group(override):
            if not override.is_sweep_override():
                groups.append(override.input_line)
            else:
                values = _values(override)
                if values:
                    groups.append(f"{'+' if override.is_add() else ''}{name}={values[0]}")
        elif not override.is_add() and not override.is_force_add():
            keys.append(override)
    if not keys:
        return
    try:
        with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
            cfg = compose("config", overrides=groups)
    except Exception:  # noqa: BLE001 - a composition Hydra refuses: its message says why
        return
    plain = OmegaConf.to_container(cfg, resolve=False)
    for override in keys:
        _check_key(plain, override)


# -- python -m nmt.train --help --------------------------------------------------

EXAMPLES = (   # from the README and the docs
    "python -m nmt.train experiment=quickstart",
    "python -m nmt.train experiment=transformer_small data.path=data/multi30k",
    "python -m nmt.train model/encoder=lstm model/decoder=lstm model/attention=luong_general "
    "model.attention.scope=local_p",
    "python -m nmt.train --multirun experiment=quickstart model/attention=bahdanau,luong_dot,luong_general",
)


def yaml_header_lines(path: Path) -> list[str]:
    """The comment lines a YAML file starts with (`# @package` left out), unprefixed."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        if not line.startswith("# @package"):
            lines.append(line.lstrip("#").strip())
    return lines


def yaml_header(path: Path) -> str:
    """The comment lines a YAML file starts with, joined: what the option is."""
    return " ".join(yaml_header_lines(path))


def yaml_keys(path: Path, prefix: str = "") -> list[tuple[str, str, str]]:
    """(dotted key, value as written, its comment) of each leaf of a config
    file, read as text so the comments are kept; `defaults`, `hydra` and
    `_target_`-like keys are left out."""
    rows, stack, skip = [], [], None       # stack: (indent, name) of the open parents
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "-")) or ":" not in stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if skip is not None and indent > skip:
            continue
        skip = None
        name, _, rest = stripped.partition(":")
        value, _, comment = rest.partition(" #")
        value, comment = value.strip(), comment.strip().lstrip("#").strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if name in ("defaults", "hydra") or name.startswith("_"):
            skip = indent
            continue
        if not value:
            stack.append((indent, name))
            continue
        rows.append((prefix + ".".join([n for _, n in stack] + [name]), value, comment))
    return rows


def default_options() -> dict[str, str]:
    """group -> its default option, from config.yaml's defaults list."""
    chosen = {}
    for line in (CONFIGS / "config.yaml").read_text(encoding="utf-8").splitlines():
        entry = line.strip().removeprefix("- ").split("#")[0]
        if line.startswith("  - ") and ":" in entry and not entry.startswith("override"):
            group, option = (part.strip() for part in entry.split(":", 1))
            chosen[group] = option
    return chosen


def _key_lines(setting: str, meaning: str, width: int) -> list[str]:
    """`    key=value    meaning`, the meaning wrapped in its column."""
    lines = textwrap.wrap(meaning, width - 41, break_on_hyphens=False, break_long_words=False) or [""]
    first = f"    {setting:<36} {lines[0]}" if len(setting) <= 36 else f"    {setting}\n{'':<41}{lines[0]}"
    return [first.rstrip()] + [f"{'':<41}{line}" for line in lines[1:]]


def help_page(width: int = 100) -> str:
    """nmt's own --help: what the command does, presets, examples, the groups
    and their options, every key of the default options with its default (the
    YAML) and its meaning (RULES)."""
    groups = sorted(str(p.parent.relative_to(CONFIGS)) for p in CONFIGS.rglob("*.yaml")
                    if p.parent != CONFIGS and not str(p.parent.relative_to(CONFIGS)).startswith("hydra"))
    groups = sorted(set(groups) - {"experiment"})
    chosen = default_options()
    out = ["usage: python -m nmt.train [group=option ...] [key=value ...]   (also: nmt-train)",
           "",
           "Train a translation model. Choose parts with group=option, set any key with key=value;",
           "the run writes outputs/DATE/TIME/ (checkpoints/best.pt, train.log, metrics.jsonl, tensorboard/)",
           "and ends by printing the commands to translate with it, see it in TensorBoard and explore it.",
           "",
           "presets (experiment=NAME):"]
    for name in group_options("experiment"):
        about = yaml_header(CONFIGS / "experiment" / f"{name}.yaml")
        out += textwrap.wrap(about, width, initial_indent=f"  {name:<20} ", subsequent_indent=" " * 23)
    out += ["", "examples:"] + [f"  {line}" for line in EXAMPLES]
    out += ["", "groups (group=option; * marks the default):"]
    for group in groups:
        options = [("*" if chosen.get(group) == o else "") + o for o in group_options(group)]
        out.append(f"  {group:<20} {', '.join(options)}")
    out += ["", "keys (key=value; the default, then what the key does: nmt/config_schema/table.py):"]
    files = [(CONFIGS / "config.yaml", ""), (CONFIGS / "trainer" / f"{chosen.get('trainer', 'default')}.yaml",
                                             "trainer.")]
    files += [(CONFIGS / group / f"{chosen[group]}.yaml", group.replace("/", ".") + ".")
              for group in groups if group != "trainer" and chosen.get(group) not in (None, "null")]
    for path, prefix in files:
        if prefix:
            out.append(f"  {prefix.rstrip('.')} ({path.relative_to(CONFIGS)}; another option has its own keys):")
        rows = yaml_keys(path, prefix)
        if not rows:
            out.append("    (no keys)")
        for key, value, _ in rows:
            out += _key_lines(f"{key}={value}", RULES[key].meaning, width)
    out += ["", "more:",
            "  python -m nmt.train --cfg job [overrides]   the composed config, every key and value",
            "  python -m nmt.train --multirun a=1,2 ...   a sweep; then python -m nmt.compare multirun/DATE/TIME",
            "  python -m nmt.train --hydra-help            Hydra's own options (run folders, launchers)",
            "  docs/explanation/attention.md (the docs' Attention families) says what each option is."]
    return "\n".join(out) + "\n"


class SweepEnd(Callback):
    """Hydra callback (configs/config.yaml, hydra.callbacks): a --multirun that
    finished ends with one line naming its folder and the command that
    compares its runs. (A sweep with a failed job ends with that job's line.)"""

    def on_multirun_end(self, config, **kwargs) -> None:
        folder = Path(str(config.hydra.sweep.dir))
        runs = len(list(folder.glob("**/summary.json")))
        write_stdout(f"nmt: sweep finished, {runs} run(s) in {folder}; compare them: "
                     f"{runnable('nmt.compare', 'nmt-compare')} {shlex.quote(str(folder.resolve()))}\n",
                     keep_going=True)
