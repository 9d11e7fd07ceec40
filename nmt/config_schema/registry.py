"""nmt's registry: every model part, optimizer and schedule by its name.

A name is the config option that chooses it (`model/attention=bahdanau`,
`model/positional=rotary`, `optimizer=adam`), and its class is that option's
`_target_` (nmt/configs/<group>/<name>.yaml): the config groups are the one
table of names and classes, and this module the one place that reads it.

A checkpoint stores each part by name, with its settings:

    model: {attention: {name: bahdanau, scope: global, ...}, encoder: {name: gru, cell: gru, ...}}

`stored_names` writes that form (no `_target_`, no `_partial_`), and
`registry_targets` reads it: each name becomes its option's class, and a name
that is not an option is refused, so nothing in a file says which code runs.
A checkpoint written before names stored `_target_` class paths; `stored_names`
maps each to the option of that class (by the class's name, so a class that
moved keeps its name; options of one class, such as gru and lstm, by the
settings that tell them apart, such as `cell`).
"""

from functools import cache

import yaml

from nmt.base.config_files import CONFIGS
from nmt.config_schema.classes import PARTS
from nmt.base.errors import NmtError

GROUPS = {
    **{("model", part): f"model/{part}" for part in PARTS},
    ("optimizer",): "optimizer",
    ("schedule",): "schedule",
}
NAME = "name"                       # the key of a stored part that names its option
HYDRA_KEYS = ("_target_", "_partial_")
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def options(group: str) -> dict:
    """name -> the option's YAML (plain values) for every option of a group (e.g. "model/encoder")."""
    found = {}
    for path in sorted((CONFIGS / group).glob("*.yaml")):
        node = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER) or {}
        if isinstance(node.get("_target_"), str):
            found[path.stem] = node
    return found


def class_of(group: str, name: str) -> str:
    """The class (its `_target_` path) of a group's option `name`."""
    return options(group)[name]["_target_"]


@cache
def identity(group: str) -> dict:
    """name -> the settings that tell it from the other options of its class
    (gru and lstm both build RNNEncoder: {"cell": "gru"} and {"cell": "lstm"})."""
    found = {}
    for name, node in options(group).items():
        twins = [other for other in options(group).values() if other["_target_"] == node["_target_"]]
        keys = [key for key in node if not key.startswith("_") and len({repr(t.get(key)) for t in twins}) > 1]
        found[name] = {key: node[key] for key in keys}
    return found


def _short(target) -> str:
    return str(target).rsplit(".", 1)[-1]


def name_of(group: str, node: dict) -> str | None:
    """The registry name of a part: its `name`, or the option whose class has
    the name of its `_target_`'s class (and its telling settings); else None."""
    if NAME in node:        # a part by name holds no class path beside it
        return node[NAME] if node[NAME] in options(group) and not set(HYDRA_KEYS) & set(node) else None
    target = node.get("_target_")
    found = [name for name, option in options(group).items()
             if isinstance(target, str) and _short(option["_target_"]) == _short(target)
             and target.split(".", 1)[0] == option["_target_"].split(".", 1)[0]
             and all(node.get(key) == value for key, value in identity(group)[name].items())]
    return found[0] if len(found) == 1 else None


def _nodes(config: dict):
    """(keys, group, node) for every part of a config that is a dict."""
    for keys, group in GROUPS.items():
        owner = config.get(keys[0]) if len(keys) == 1 else (config.get("model") or {})
        node = owner if len(keys) == 1 else owner.get(keys[1]) if isinstance(owner, dict) else None
        if isinstance(node, dict):
            yield keys, group, node


def _replaced(config: dict, keys: tuple, node: dict) -> dict:
    if len(keys) == 1:
        return dict(config, **{keys[0]: node})
    return dict(config, model=dict(config["model"], **{keys[1]: node}))


def _refuse(path, keys: tuple, group: str, what: str) -> None:
    raise NmtError(f"checkpoint {path} was refused: its config {what} at {'.'.join(keys)}, which is not "
                   f"one of nmt's {group} options ({', '.join(options(group))}); "
                   "load only checkpoints written by nmt.train")


def stored_names(config, path="") -> dict:
    """`config` (a plain dict) with each part named: `name` instead of the
    Hydra keys. A part that names no option is left as it is (the checks
    refuse it) unless `path` is given: then it is refused, in one line."""
    if not isinstance(config, dict):
        return config
    for keys, group, node in _nodes(config):
        name = name_of(group, node)
        if name is None and path:
            beside = [key for key in HYDRA_KEYS if key in node and NAME in node]
            what = f"names {str(node.get(NAME, node.get('_target_')))[:80]!r}"
            if beside:
                raise NmtError(f"checkpoint {path} was refused: its config holds {beside[0]} beside a name at "
                               f"{'.'.join(keys)}; a part is named, never a class; "
                               "load only checkpoints written by nmt.train")
            _refuse(path, keys, group, what)
        if name is not None:
            settings = {key: value for key, value in node.items() if key not in HYDRA_KEYS and key != NAME}
            config = _replaced(config, keys, {NAME: name, **settings})
    return config


def registry_targets(config, path) -> dict:
    """A stored config (each part by name) with each part's class from the
    registry: the option's Hydra keys instead of `name`. A name that is not
    an option of its group, or settings that contradict it (name lstm, cell
    gru), are refused in one line."""
    if not isinstance(config, dict):
        return config
    for keys, group, node in _nodes(config):
        name = node.get(NAME)
        if name not in options(group):
            _refuse(path, keys, group, f"names {str(name)[:80]!r}")
        contradicted = [key for key, value in identity(group)[name].items() if node.get(key, value) != value]
        if contradicted:
            _refuse(path, keys, group, f"names {name!r} with {contradicted[0]}={node[contradicted[0]]!r}")
        option = options(group)[name]
        settings = {key: value for key, value in node.items() if key != NAME}
        config = _replaced(config, keys, {**{k: option[k] for k in HYDRA_KEYS if k in option}, **settings})
    return config
