"""A config key's default lives in one place, the YAML of nmt/configs. The copies that
remain elsewhere are kept equal to it here:

- the constructor defaults of the classes a node names with `_target_` (an attention,
  an encoder, a schedule built from Python rather than from a config);
- TrainSettings, the trainer's typed settings, read from the default trainer config;
- the code's fallback for a key an old checkpoint's config may lack (the hub dataset).

(Meanings and allowed values have one place too: nmt/config_schema/table.py,
tests/test_config_schema.py.)
"""

import dataclasses
import importlib
import inspect

import pytest
from omegaconf import OmegaConf

from nmt.config_schema.kinds import show
from nmt.config_schema.table import RULES
from nmt.config_schema.values import as_plain
from nmt.data.corpora import DEFAULT_HUB_ID
from nmt.training.settings import TrainSettings
from tests.test_config_schema import compose_config, every_config

# (class, parameter) whose default is not a copy of the key's: the positional classes
# take `kind` only to refuse a kind other than their own (None: not given)
NOT_A_DEFAULT = {("nmt.core.positional", "kind")}


def _class(target: str):
    module, _, name = target.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _nodes(node: dict, path: str = ""):
    """(dotted path, node) of every mapping with a `_target_`."""
    if "_target_" in node:
        yield path.rstrip("."), node
    for key, value in node.items():
        if isinstance(value, dict):
            yield from _nodes(value, f"{path}{key}.")


@pytest.fixture(scope="module")
def class_defaults() -> list[tuple[str, str, object, object]]:
    """(key, class, YAML value, constructor default) of every key of every node whose
    class is nmt's and has a default for it, over every option of every group (a preset,
    experiment=NAME, sets its own values: not defaults)."""
    found = {}
    for name, cfg in every_config().items():
        if name.startswith("experiment="):
            continue
        plain = {k: v for k, v in as_plain(cfg).items() if k != "hydra"}
        for path, node in _nodes(plain):
            if not node["_target_"].startswith("nmt."):
                continue                        # torch's own classes: their defaults are not nmt's
            params = inspect.signature(_class(node["_target_"])).parameters
            for key, value in node.items():
                param = params.get(key)
                if key.startswith("_") or param is None or param.default is inspect.Parameter.empty:
                    continue
                if any(node["_target_"].startswith(m) and key == k for m, k in NOT_A_DEFAULT):
                    continue
                found[(f"{path}.{key}", node["_target_"])] = (value, param.default)
    return [(key, target, value, default) for (key, target), (value, default) in found.items()]


def test_class_defaults_equal_the_yaml(class_defaults):
    assert len(class_defaults) > 60            # the attentions, encoders, decoders, bridges, positions, schedules
    differ = [f"{key}: {show(value)} in the YAML, {show(default)} in {target}"
              for key, target, value, default in class_defaults if value != default]
    assert not differ, "a constructor default differs from the YAML's (nmt/configs): " + "; ".join(differ)


def test_every_key_a_class_takes_has_a_rule(class_defaults):
    assert not [key for key, *_ in class_defaults if key not in RULES]


def test_train_settings_read_the_yaml_defaults():
    trainer = compose_config().trainer
    settings = TrainSettings.from_config(trainer, precision=str(trainer.precision))
    yaml = OmegaConf.to_container(trainer)
    # null in the YAML is "none" in the settings: no time budget (0.0), every test sentence (None)
    as_read = {"max_minutes": 0.0 if yaml["max_minutes"] is None else yaml["max_minutes"]}
    for field in dataclasses.fields(TrainSettings):
        if field.name == "precision_auto":        # derived: trainer.precision == "auto"
            assert settings.precision_auto is (yaml["precision"] == "auto")
            continue
        assert f"trainer.{field.name}" in RULES, field.name   # a setting is a key with its rule and meaning
        assert getattr(settings, field.name) == as_read.get(field.name, yaml[field.name]), field.name


def test_the_hub_fallback_is_the_yaml_default():
    # nmt.data.corpora falls back to DEFAULT_HUB_ID for a data config without hub_id
    assert DEFAULT_HUB_ID == compose_config("data=multi30k").data.hub_id
