"""Every value of a config against its rule in RULES (table.py): the first
value that breaks its rule, or a key no rule names, is one NmtError line."""

import difflib

from omegaconf import DictConfig, ListConfig, OmegaConf

from nmt.config_schema.kinds import show
from nmt.config_schema.table import RULES
from nmt.base.errors import NmtError

MISSING = "???"


def leaves(node, prefix: str = ""):
    """(dotted key, value) of every leaf of a plain nested dict; lists are leaves.
    Keys starting with "_" (`_target_`, `_partial_`) are skipped."""
    for key, value in node.items():
        if str(key).startswith("_"):
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from leaves(value, path + ".")
        else:
            yield path, value


def as_plain(cfg) -> dict:
    """The config as plain Python, interpolations resolved, `???` kept as MISSING."""
    if isinstance(cfg, (DictConfig, ListConfig)):
        try:
            return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
        except Exception as error:  # noqa: BLE001 - an interpolation that cannot resolve
            raise NmtError(f"the config cannot be resolved: {str(error).splitlines()[0]}") from None
    return cfg


def _unknown(path: str, value) -> str:
    """A key no rule names, with the closest known key beside it."""
    parent = path.rsplit(".", 1)[0] + "." if "." in path else ""
    siblings = [k for k in RULES if k.startswith(parent) and "." not in k[len(parent):]]
    close = difflib.get_close_matches(path, siblings, n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]}?" if close else ""
    return (f"{path}={show(value)}: not a setting nmt knows{hint} "
            "(python -m nmt.train --cfg job lists every key)")


def _check(node: dict, prefix: str) -> None:
    for key, value in node.items():
        if str(key).startswith("_"):
            continue
        path = f"{prefix}{key}"
        rule = RULES.get(path)
        if rule is None:
            if isinstance(value, dict):
                _check(value, path + ".")
            elif "_target_" not in node:
                # a node with a class (model parts, optimizer, schedule) answers for its own
                # keys through the class's settings (classes.py, check_group_settings)
                raise NmtError(_unknown(path, value))
            continue
        if isinstance(value, str) and value == MISSING:
            continue                    # ??? (a required path): the data loader names it
        message = rule.message(path, value)
        if message:
            raise NmtError(message)


def check_values(plain: dict) -> None:
    """NmtError naming the first value of the plain config outside its rule
    (the `hydra` node is Hydra's), or two equal languages."""
    _check({k: v for k, v in plain.items() if k != "hydra"}, "")
    data = plain.get("data", {})
    if data.get("src_lang") is not None and data.get("src_lang") == data.get("tgt_lang"):
        raise NmtError(f"data.src_lang and data.tgt_lang are both {data['src_lang']}; "
                       "choose two different languages")
