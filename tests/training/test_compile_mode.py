"""trainer.compile_mode reaches torch.compile: the mode (reduce-overhead records
CUDA graphs on a GPU) and dynamic shapes, as build_trainer asks for them."""

import pytest
import torch

from nmt.training.build import build_trainer
from nmt.training.config_checks import check_config
from tests.helpers import make_config

TOY = ("experiment=quickstart", "data.n_train=64", "trainer.heatmap_sentences=0")


@pytest.mark.parametrize("mode, expected", [("default", None), ("reduce-overhead", "reduce-overhead"),
                                            ("max-autotune-no-cudagraphs", "max-autotune-no-cudagraphs")])
def test_compile_mode_is_the_mode_torch_compile_gets(tmp_path, cache_dir, monkeypatch, mode, expected):
    calls = []

    def fake_compile(module, **options):
        calls.append(options)
        return module

    monkeypatch.setattr(torch, "compile", fake_compile)
    cfg = make_config(*TOY, "trainer.compile=true", f"trainer.compile_mode={mode}", cache_dir=cache_dir)
    check_config(cfg)
    trainer = build_trainer(cfg, tmp_path)
    assert calls == [{"dynamic": True, "mode": expected}]
    assert trainer.settings.compile_mode == mode


def test_without_compile_nothing_is_compiled(tmp_path, cache_dir, monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda *a, **k: pytest.fail("compiled without trainer.compile"))
    cfg = make_config(*TOY, cache_dir=cache_dir)
    check_config(cfg)
    trainer = build_trainer(cfg, tmp_path)
    assert trainer.forward is trainer.parallel
