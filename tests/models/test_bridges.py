"""Bridges by hand: init vectors, attention pooling over real tokens only,
the structured penalty, padding invariance, gradients and the yamls."""

from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from nmt.base.errors import NmtError
from nmt.core.bridges import (HanBridge, LastBridge, MeanBridge, StructuredBridge, ZeroBridge,
                                ZhouBridge)

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "model" / "bridge"


def real(lengths, S):
    """mask (B, 1, S), True on the first lengths[b] positions."""
    return (torch.arange(S)[None, :] < torch.tensor(lengths)[:, None])[:, None, :]


def close(actual, expected, atol=1e-5):
    return torch.allclose(actual, torch.tensor(expected, dtype=actual.dtype), atol=atol)


def identity_(linear):
    with torch.no_grad():
        linear.weight.copy_(torch.eye(linear.weight.size(0), linear.weight.size(1)))
        if linear.bias is not None:
            linear.bias.zero_()


# H: h_1 = [0, 0], h_2 = [1, 1], then a padding row that must not matter
H = torch.tensor([[[0.0, 0.0], [1.0, 1.0], [50.0, -50.0]]])
MASK = real([2], 3)
LAST = torch.tensor([[0.5, -1.0]])


def test_last_by_hand():
    b = LastBridge(2, 2)
    identity_(b.proj)
    init, penalty = b(H, MASK, LAST)
    # tanh([0.5, -1]) = [0.462117, -0.761594]
    assert close(init, [[0.462117, -0.761594]])
    assert penalty.dim() == 0 and float(penalty.detach()) == 0.0


def test_mean_by_hand():
    b = MeanBridge(2, 2)
    identity_(b.proj)
    memory = torch.tensor([[[1.0, 0.0], [3.0, 2.0], [100.0, 100.0]]])
    init, penalty = b(memory, MASK, LAST)
    # mean of the two real rows = [2, 1]; tanh -> [0.964028, 0.761594]
    assert close(init, [[0.964028, 0.761594]])
    assert float(penalty.detach()) == 0.0


def test_zero():
    init, penalty = ZeroBridge(2, 3)(H.expand(4, 3, 2), MASK.expand(4, 1, 3), LAST.expand(4, 2))
    assert torch.equal(init, torch.zeros(4, 3)) and float(penalty.detach()) == 0.0


def test_zhou_by_hand():
    b = ZhouBridge(2, 2)
    identity_(b.proj)
    with torch.no_grad():
        b.w.weight.fill_(1.0)
    init, penalty = b(H, MASK, LAST)
    # w . tanh(h) = [0, 2 tanh(1)] = [0, 1.523188] (padding dropped)
    # alpha_2 = sigmoid(1.523188) = 0.821007, r = 0.821007 * [1, 1]
    # init = tanh(r) = 0.675618
    assert close(init, [[0.675618, 0.675618]])
    assert float(penalty.detach()) == 0.0


def test_han_by_hand():
    b = HanBridge(2, 2, hidden_dim=2)
    identity_(b.proj)
    identity_(b.w)
    with torch.no_grad():
        b.w.bias.copy_(torch.tensor([1.0, -1.0]))
        b.u_w.weight.fill_(1.0)
    init, penalty = b(H, MASK, LAST)
    # u_1 = tanh([0, 0] + [1, -1]) -> u_1 . 1 = tanh(1) - tanh(1) = 0
    # u_2 = tanh([1, 1] + [1, -1]) = tanh([2, 0]) -> 0.964028
    # alpha_2 = sigmoid(0.964028) = 0.723927, r = 0.723927 * [1, 1]
    # init = tanh(0.723927) = 0.619336
    assert close(init, [[0.619336, 0.619336]])
    assert float(penalty.detach()) == 0.0


def structured_case(penalty_weight=1.0):
    """Two hops whose attention is one-hot by construction (scores +-50)."""
    b = StructuredBridge(2, 2, hops=2, hidden_dim=2, penalty_weight=penalty_weight)
    identity_(b.w_s1)
    with torch.no_grad():
        b.w_s2.weight.copy_(torch.tensor([[50.0, 0.0], [0.0, 50.0]]))
        b.proj.weight.copy_(torch.tensor([[0.1, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.05]]))
        b.proj.bias.zero_()
    # tanh(W_s1 h): h = [10, 0] -> [1, 0]; [0, 10] -> [0, 1]; [10, 10] -> [1, 1]; [0, 0] -> 0
    # sentence 1: h = [10, 0], [0, 10]: hop 1 scores [50, 0] -> position 1,
    #   hop 2 scores [0, 50] -> position 2: A = I, A A^T - I = 0, penalty 0
    # sentence 2: h = [10, 10], [0, 0]: both hops score [50, 0] -> A = [[1, 0], [1, 0]],
    #   A A^T = [[1, 1], [1, 1]], minus I = [[0, 1], [1, 0]], ||.||_F^2 = 2
    memory = torch.tensor([[[10.0, 0.0], [0.0, 10.0], [7.0, 7.0]],
                           [[10.0, 10.0], [0.0, 0.0], [7.0, 7.0]]])
    return b, memory, real([2, 2], 3)


def test_structured_penalty_by_hand():
    b, memory, mask = structured_case()
    init, penalty = b(memory, mask, memory[:, 0])
    # batch mean of [0, 2] = 1
    assert abs(float(penalty.detach()) - 1.0) < 1e-6
    init, penalty = b(memory[1:], mask[1:], memory[1:, 0])
    assert abs(float(penalty.detach()) - 2.0) < 1e-6          # two identical one-hot rows


def test_structured_penalty_is_weighted_and_init_by_hand():
    b, memory, mask = structured_case(penalty_weight=0.5)
    init, penalty = b(memory[:1], mask[:1], memory[:1, 0])
    assert abs(float(penalty.detach())) < 1e-6
    init, penalty = b(memory[1:], mask[1:], memory[1:, 0])
    assert abs(float(penalty.detach()) - 1.0) < 1e-6          # 0.5 * 2
    # sentence 1: M = A H = [h_1; h_2] = [[10, 0], [0, 10]] -> flat [10, 0, 0, 10]
    #   W flat = [0.1 * 10, 0.05 * 10] = [1, 0.5] -> tanh = [0.761594, 0.462117]
    init, _ = b(memory[:1], mask[:1], memory[:1, 0])
    assert close(init, [[0.761594, 0.462117]])


def test_structured_rejects_bad_hyperparameters():
    with pytest.raises(NmtError, match="hops"):
        StructuredBridge(2, 2, hops=0)
    with pytest.raises(NmtError, match="penalty_weight"):
        StructuredBridge(2, 2, penalty_weight=-1.0)


BRIDGES = {
    "last": lambda: LastBridge(3, 4),
    "mean": lambda: MeanBridge(3, 4),
    "zero": lambda: ZeroBridge(3, 4),
    "zhou": lambda: ZhouBridge(3, 4),
    "han": lambda: HanBridge(3, 4, hidden_dim=5),
    "structured": lambda: StructuredBridge(3, 4, hops=2, hidden_dim=5),
}


@pytest.mark.parametrize("name", BRIDGES)
def test_padding_changes_nothing(name):
    torch.manual_seed(0)
    b = BRIDGES[name]()
    memory, last, mask = torch.randn(2, 5, 3), torch.randn(2, 3), real([5, 2], 5)
    before = b(memory, mask, last)
    changed = memory.clone()
    changed[1, 2:] = 100 * torch.randn(3, 3)
    after = b(changed, mask, last)
    assert before[0].shape == (2, 4) and before[1].dim() == 0
    assert torch.allclose(before[0], after[0], atol=1e-6)
    assert torch.allclose(before[1], after[1], atol=1e-6)


@pytest.mark.parametrize("name", BRIDGES)
def test_gradients_flow(name):
    torch.manual_seed(0)
    b = BRIDGES[name]()
    memory = torch.randn(2, 5, 3, requires_grad=True)
    last = torch.randn(2, 3, requires_grad=True)
    init, penalty = b(memory, real([5, 3], 5), last)
    if name == "zero":
        assert not init.requires_grad and not any(True for _ in b.parameters())
        return
    (init.sum() + penalty).backward()
    for pname, p in b.named_parameters():
        assert p.grad is not None and bool(p.grad.abs().sum() > 0), pname
    used = last if name == "last" else memory
    assert used.grad is not None and bool(used.grad.abs().sum() > 0)


@pytest.mark.parametrize("name", BRIDGES)
def test_yaml_builds_the_bridge(name):
    cfg = OmegaConf.load(CONFIGS / f"{name}.yaml")
    b = instantiate(cfg, enc_dim=3, dec_dim=4)
    assert type(b) is type(BRIDGES[name]())
    init, penalty = b(torch.randn(2, 5, 3), real([5, 2], 5), torch.randn(2, 3))
    assert init.shape == (2, 4) and penalty.dim() == 0


def test_structured_yaml_keys():
    cfg = OmegaConf.load(CONFIGS / "structured.yaml")
    assert {"hops", "hidden_dim", "penalty_weight"} <= set(cfg)
