"""The keys of a node with a `_target_` (model parts, optimizer, schedule):
each must be a keyword argument its class takes, read from the class's
signature, so the class's settings are the rule and nothing repeats them."""

import inspect

from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf

from nmt.base.config_files import CONFIGS
from nmt.base.errors import NmtError

# What the builder or trainer passes itself: never a key of the YAML.
BUILDER_ARGUMENTS = {"self", "vocab_size", "memory_dim", "attention", "positional", "pad_id", "query_dim",
                     "key_dim", "enc_dim", "dec_dim", "params", "optimizer"}
PARTS = ("encoder", "decoder", "attention", "bridge", "positional")
INSPECTED = ("nmt.", "torch.optim.")    # classes whose settings are looked up (imported) by name


def _settings(target: str) -> set[str] | None:
    """The keyword arguments the class `target` takes (None: any, or unknown)."""
    if not str(target).startswith(INSPECTED):
        return None
    try:
        parameters = inspect.signature(get_class(str(target)).__init__).parameters.values()
    except Exception:  # noqa: BLE001 - a target that does not import: instantiate says so
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters} - BUILDER_ARGUMENTS


def _preset_keys(preset: str, key: str) -> set[str]:
    """The keys under `key` (e.g. model.encoder) that the experiment preset sets itself."""
    path = CONFIGS / "experiment" / f"{preset}.yaml"
    try:
        node = OmegaConf.select(OmegaConf.load(path), key)
    except Exception:  # noqa: BLE001 - no such file: nothing to name
        return set()
    return set(node.keys()) if isinstance(node, DictConfig) else set()


def check_group_settings(node, group: str, choices: dict | None = None) -> None:
    """Every key of a group's node (group "model/encoder", "optimizer", ...) is one
    its `_target_` class takes.

    A preset that sets keys for one option and a command line that picks
    another (experiment=quickstart model/encoder=transformer) would otherwise
    fail in the constructor with "unexpected keyword argument 'embed_dim'".
    `choices` is Hydra's runtime.choices (group -> option), for the message.
    """
    if not isinstance(node, DictConfig):
        return
    hydra_keys = [key for key in node.keys() if str(key).startswith("_") and key not in ("_target_", "_partial_")]
    if hydra_keys:
        raise NmtError(f"{group.replace('/', '.')}.{hydra_keys[0]}: nmt builds each part from its named "
                       "settings only (_target_ and the class's keyword arguments); remove it")
    takes = _settings(node.get("_target_", ""))
    if takes is None:
        return
    foreign = [key for key in node.keys() if not str(key).startswith("_") and key not in takes]
    if not foreign:
        return
    choices = dict(choices or {})
    prefix, part = group.replace("/", "."), group.rsplit("/", 1)[-1]
    option = choices.get(group)
    named = f"{group}={option}" if option else str(node._target_).rsplit(".", 1)[-1]
    keys = ", ".join(f"{prefix}.{key}" for key in foreign)
    its = f"its settings are {', '.join(sorted(takes))}" if takes else "it has no settings"
    preset = choices.get("experiment")
    if preset and option and set(foreign) & _preset_keys(str(preset), prefix):
        raise NmtError(f"experiment={preset} sets {keys} for its own {part}, which {named} does "
                       f"not take ({its}); drop {group}={option} to use the preset's {part}, "
                       f"or drop experiment={preset} and set {prefix}.* yourself")
    raise NmtError(f"{keys}: not a setting of {named} ({its}); remove it or choose the "
                   f"{group} option it belongs to")


def check_model_settings(model_cfg: DictConfig, choices: dict | None = None) -> None:
    """check_group_settings for each part of the model."""
    for part in PARTS:
        check_group_settings(model_cfg.get(part), f"model/{part}", choices)
