"""Every attention yaml builds, takes every scope, and drives an RNN decoder."""

from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from nmt.core.attention.base import SCOPES, Attention
from nmt.core.rnn_decoder import RNNDecoder
from nmt.core.outputs import Memory

ROOT = Path(__file__).resolve().parents[2]
ATTENTION = ROOT / "configs" / "model" / "attention"
NAMES = ["bahdanau", "luong_dot", "luong_general", "luong_concat", "luong_location",
         "scaled_dot", "cosine", "multihead", "coverage"]
OWN_KEYS = {"bahdanau": {"hidden_dim": 256}, "luong_concat": {"hidden_dim": 256},
            "coverage": {"hidden_dim": 256, "coverage_loss_weight": 0.1},
            "luong_location": {"max_len": 256}, "multihead": {"heads": 4},
            "cosine": {"sharpness": 10.0, "learn_sharpness": True}, "luong_general": {"scaled": False}}


def test_every_option_has_a_yaml():
    assert sorted(p.stem for p in ATTENTION.glob("*.yaml")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_yaml_holds_target_scope_window_and_own_keys(name):
    cfg = OmegaConf.load(ATTENTION / f"{name}.yaml")
    assert cfg.scope == "global" and cfg.window == 5
    assert cfg.normaliser == "softmax"
    assert set(cfg) == {"_target_", "scope", "window", "normaliser", *OWN_KEYS.get(name, {})}
    for key, value in OWN_KEYS.get(name, {}).items():
        assert cfg[key] == value


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("name", NAMES)
def test_yaml_builds_with_every_scope(name, scope):
    cfg = OmegaConf.load(ATTENTION / f"{name}.yaml")
    cfg.scope = scope
    module = instantiate(cfg, query_dim=8, key_dim=8)
    assert isinstance(module, Attention) and module.scope == scope and module.output_size == 8


def test_readme_override_composes():
    # python -m nmt.train model/attention=luong_general model.attention.scope=local_p
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose("config", overrides=["model/attention=luong_general",
                                           "model.attention.scope=local_p",
                                           "model/bridge=structured"])
    module = instantiate(cfg.model.attention, query_dim=6, key_dim=10)
    assert module.scope == "local_p" and module.window == 5
    bridge = instantiate(cfg.model.bridge, enc_dim=10, dec_dim=6)
    assert bridge.hops == 4


@pytest.mark.parametrize("style, scope", [("luong", s) for s in SCOPES] + [("bahdanau", "global")])
@pytest.mark.parametrize("name", NAMES)
def test_rnn_decoder_runs_with_each_attention(name, style, scope):
    torch.manual_seed(0)
    cfg = OmegaConf.load(ATTENTION / f"{name}.yaml")
    cfg.scope, cfg.window = scope, 1
    attention = instantiate(cfg, query_dim=8, key_dim=8)
    decoder = RNNDecoder(11, 8, attention, cell="gru", style=style, embed_dim=4, hidden_size=8)
    mask = torch.tensor([[True] * 4, [True] * 2 + [False] * 2])[:, None, :]   # (B, 1, S)
    memory = Memory(torch.randn(2, 4, 8), mask)
    state = decoder.init_state(memory, torch.zeros(2, 8))
    out = decoder(torch.randint(4, 11, (2, 3)), state, memory)
    assert out.logits.shape == (2, 3, 11) and out.weights.shape == (2, 3, 4)
    assert bool((out.weights[1, :, 2:] == 0).all())
    assert (out.log_prob is not None) == (scope == "hard")
    assert (out.center is not None) == (scope == "local_p")
    # one search step after reordering the beam, prepared keys included
    state = decoder.reorder_state(state, torch.tensor([1, 1, 0]))
    memory = memory.index_select(torch.tensor([1, 1, 0]))
    logits, state, weights = decoder.step(torch.tensor([2, 2, 2]), state, memory)
    assert logits.shape == (3, 11) and weights.shape == (3, 4)
    assert bool((weights[:2, 2:] == 0).all())
