"""A checkpoint's config is data, never code: checked before anything is built.

A checkpoint's model is built from the config stored in it, by the
`_target_` class of each part. That config is whoever wrote the file's:
an interpolation (`${oc.create:{_target_: builtins.open, ...}}`, or
`${payload}` pointing at a node of its own) would be resolved, and a nested
`_target_` called, while the model is built. So `check_stored_config`
refuses, before OmegaConf or Hydra sees the config:

    ${...}          anywhere (a value or a key): nothing is resolved
    _target_        anywhere but model.<part> (optimizer and schedule: their
                    own groups' classes), and only the classes of nmt's
                    config groups (nmt/configs/model/<part>/*.yaml)
    _args_, _partial_, _recursive_, _convert_, ...   Hydra's other keys
    unknown keys    each value against nmt's schema (nmt.config_schema):
                    a part's keys are its class's settings

What passes holds plain values only; the model is built from it.
"""

from functools import cache

import yaml
from omegaconf import OmegaConf

from nmt.base.config_files import CONFIGS
from nmt.config_schema.classes import PARTS, check_group_settings
from nmt.config_schema.values import check_values
from nmt.base.errors import NmtError, with_article

GROUPS = {
    **{("model", part): f"model/{part}" for part in PARTS},
    ("optimizer",): "optimizer",
    ("schedule",): "schedule",
}
PARTIAL_GROUPS = (("optimizer",), ("schedule",))  # `_partial_: true`: the trainer supplies the rest
TOP_LEVEL = ("data", "model", "optimizer", "schedule", "trainer", "cache_dir")
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser where PyYAML has it


@cache
def registered_targets(group: str) -> frozenset:
    """The `_target_` of every option of a config group (e.g. "model/encoder")."""
    found = set()
    for path in sorted((CONFIGS / group).glob("*.yaml")):
        target = (yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER) or {}).get("_target_")
        if isinstance(target, str):
            found.add(target)
    return frozenset(found)


def _refuse(path, where: str, problem: str) -> None:
    raise NmtError(
        f"checkpoint {path} was refused: its config {problem} at {where or 'the top'}; a "
        "checkpoint's config holds plain values only; load only checkpoints written by nmt.train"
    )


def _walk(node, keys: tuple = ()):
    """(keys, key, value) for every entry of nested dicts and lists."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield keys, key, value
        yield from _walk(value, keys + (key,))


def _check_entry(path, keys: tuple, key, value) -> None:
    where = ".".join(str(k) for k in keys + (key,))
    if isinstance(key, str) and "${" in key or isinstance(value, str) and "${" in value:
        _refuse(path, where, "holds an interpolation (${...}), which would run when resolved")
    if "???" in [v for v in (key, value) if isinstance(v, str)]:
        _refuse(path, where, "holds ??? (a value that was never set), which nmt cannot build from")
    if not isinstance(key, (str, int)):
        _refuse(path, where, f"has a key that is {with_article(type(key).__name__)} (not text or a whole number)")
    if not isinstance(value, (dict, list, str, int, float, bool, type(None))):
        _refuse(path, where, f"holds {with_article(type(value).__name__)}, not a plain value")
    if not isinstance(key, str) or not key.startswith("_"):
        return
    group = GROUPS.get(keys)
    if key == "_target_" and group is not None:
        if value not in registered_targets(group):
            _refuse(path, where, f"names {str(value)[:80]!r}, which is not a class of nmt's {group} options")
    elif not (key == "_partial_" and keys in PARTIAL_GROUPS and value is True):
        _refuse(path, where, f"holds {key}, which nmt does not build from a checkpoint")


def check_stored_config(config, path) -> None:
    """NmtError (one line) unless `config` is plain data that nmt's schema accepts."""
    if not isinstance(config, dict):
        raise NmtError(f"checkpoint {path} holds no config; it was not written by nmt.train")
    for keys, key, value in _walk(config):
        _check_entry(path, keys, key, value)
    foreign = [key for key in config if key not in TOP_LEVEL]
    if foreign:
        _refuse(path, str(foreign[0]), "holds a key nmt does not know")
    if not isinstance(config.get("model"), dict) or any(
        not isinstance(config["model"].get(part), dict) for part in PARTS
    ):
        _refuse(path, "model", "does not describe every part of a model")
    try:
        check_values(config)
        for keys, group in GROUPS.items():
            node = config.get(keys[0]) if len(keys) == 1 else config["model"].get(keys[1])
            if isinstance(node, dict):
                check_group_settings(OmegaConf.create(node), group)
    except NmtError as error:
        raise NmtError(f"checkpoint {path} was refused: {error}") from None
