"""Checkpoints name their parts by nmt's registry names (nmt.config_schema.registry):
a new checkpoint stores no class path, each part maps to its class from the
registry alone, and a class path of an older checkpoint maps to its name by class."""

import json

import pytest
import torch

from nmt.config_schema.registry import GROUPS, NAME, class_of, name_of, options, registry_targets, stored_names
from nmt.store.checkpoints import load_checkpoint, save_checkpoint
from nmt.translator import Translator
from tests.test_old_checkpoints import OLD, _compare


def _keys(node):
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from _keys(value)


def test_a_new_checkpoint_names_its_parts_and_stores_no_class(toy_checkpoint):
    config = torch.load(toy_checkpoint, weights_only=True)["config"]
    assert not [key for key in _keys(config) if str(key).startswith("_")]       # no _target_, no _partial_
    model = config["model"]
    assert {part: model[part][NAME] for part in ("encoder", "decoder", "attention", "bridge", "positional")} == {
        "encoder": "gru", "decoder": "gru", "attention": "luong_general", "bridge": "last", "positional": "none"}
    assert (config["optimizer"][NAME], config["schedule"][NAME]) == ("adam", "constant")
    loaded = load_checkpoint(toy_checkpoint)["config"]          # the registry's classes, for building
    assert loaded["model"]["encoder"]["_target_"] == class_of("model/encoder", "gru")


@pytest.mark.parametrize("path", OLD, ids=[p.stem for p in OLD])
def test_an_old_checkpoint_written_again_names_its_parts_and_translates_the_same(path, tmp_path):
    again = save_checkpoint(load_checkpoint(path), tmp_path / "again.pt")
    stored = torch.load(again, weights_only=True)["config"]
    assert "_target_" not in set(_keys(stored))
    assert stored["model"]["attention"][NAME] == "bahdanau"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        expected = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        _compare(Translator.from_checkpoint(again, device="cpu"), expected)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("group", sorted(GROUPS.values()))
def test_every_option_and_its_class_path_map_to_its_name_and_back(group):
    assert options(group)
    for name, option in options(group).items():
        assert name_of(group, option) == name
        keys = GROUPS_BY_NAME[group]
        config = _placed(keys, {**option, "extra": 1})
        named = stored_names(config, "x.pt")
        assert _node(named, keys) == {NAME: name, **{k: v for k, v in option.items() if not k.startswith("_")},
                                      "extra": 1}
        back = _node(registry_targets(named, "x.pt"), keys)
        assert back == {**option, "extra": 1}


GROUPS_BY_NAME = {group: keys for keys, group in GROUPS.items()}


def _placed(keys, node):
    return {keys[0]: node} if len(keys) == 1 else {"model": {keys[1]: node}}


def _node(config, keys):
    return config[keys[0]] if len(keys) == 1 else config["model"][keys[1]]


def test_a_moved_class_keeps_its_name_and_one_class_of_two_options_is_told_by_its_settings():
    assert name_of("model/encoder", {"_target_": "nmt.models.encoders.transformer.TransformerEncoder"}) == "transformer"
    assert name_of("model/decoder", {"_target_": "nmt.models.decoders.transformer.TransformerDecoder"}) == "transformer"
    rnn = class_of("model/encoder", "gru")
    assert class_of("model/encoder", "lstm") == rnn
    assert name_of("model/encoder", {"_target_": rnn, "cell": "lstm"}) == "lstm"
    assert name_of("model/encoder", {"_target_": rnn, "cell": "gru"}) == "gru"
    assert name_of("model/encoder", {"_target_": rnn}) is None                  # which one: not said
    assert name_of("model/encoder", {"_target_": "evil.RNNEncoder", "cell": "gru"}) is None
