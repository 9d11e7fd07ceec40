"""Scopes (global, local-m, local-p, hard) by hand, and what holds for every
score x scope: padding gets no weight and changes nothing, gradients flow."""

import math

import pytest
import torch

from nmt.base.errors import NmtError
from nmt.core.attention.bahdanau import AdditiveAttention
from nmt.core.attention.luong_concat import ConcatAttention
from nmt.core.attention.base import SCOPES, AttentionOutput
from nmt.core.attention.cosine import CosineAttention
from nmt.core.attention.location import LocationAttention
from nmt.core.multihead import MultiHeadDotAttention
from nmt.core.attention.luong_dot import DotAttention
from nmt.core.attention.luong_general import GeneralAttention
from nmt.core.attention.scaled_dot import ScaledDotAttention

LN2 = math.log(2.0)
E1 = [0.731059, 0.268941]                   # softmax([1, 0])


def real(lengths, S):
    """mask (B, 1, S), True on the first lengths[b] positions."""
    return (torch.arange(S)[None, :] < torch.tensor(lengths)[:, None])[:, None, :]


def close(actual, expected, atol=1e-5):
    return torch.allclose(actual, torch.tensor(expected, dtype=actual.dtype), atol=atol)


def scalar_keys(*values):
    """One sentence whose keys are 1-d: dot score with query [1] = the key."""
    return torch.tensor(values)[None, :, None]                           # (1, S, 1)


# -- global -------------------------------------------------------------------
def test_global_puts_no_weight_on_padding():
    m = DotAttention(1, 1)
    k = scalar_keys(1.0, 0.0, 50.0)                                      # third is padding
    out = m(torch.ones(1, 1, 1), m.prepare(k), k, real([2], 3))
    # scores [1, 0, -] -> [e/(e+1), 1/(e+1), 0] despite the padding's score 50
    assert close(out.weights, [[E1 + [0.0]]])


# -- local-m ------------------------------------------------------------------
def test_local_m_window_by_hand():
    m = DotAttention(1, 1, scope="local_m", window=1)
    k = scalar_keys(0.0, 0.0, LN2, 0.0, 0.0, 99.0)                      # 5 real, 1 pad
    v = torch.arange(6.0)[None, :, None]                                # value = position
    q = torch.ones(1, 1, 1)
    out = m(q, m.prepare(k), v, real([5], 6), torch.tensor([[2]]))
    # t = 2, D = 1: window {1, 2, 3}, scores [0, ln 2, 0] -> exp [1, 2, 1] / 4
    assert close(out.weights, [[[0.0, 0.25, 0.5, 0.25, 0.0, 0.0]]])
    # context = 0.25 * 1 + 0.5 * 2 + 0.25 * 3 = 2
    assert close(out.context, [[[2.0]]])
    assert out.center is None and out.log_prob is None


def test_local_m_positions_default_to_arange():
    m = DotAttention(1, 1, scope="local_m", window=1)
    k = scalar_keys(0.0, 0.0, LN2, 0.0, 0.0, 99.0)
    q = torch.ones(1, 3, 1)                                              # T = 3, positions None
    w = m(q, m.prepare(k), k, real([5], 6)).weights
    # t = 0: window {0, 1} (position -1 does not exist), scores [0, 0] -> [1/2, 1/2]
    # t = 1: window {0, 1, 2}, scores [0, 0, ln 2] -> [1, 1, 2] / 4
    # t = 2: window {1, 2, 3} -> [1, 2, 1] / 4
    assert close(w, [[[0.5, 0.5, 0, 0, 0, 0],
                      [0.25, 0.25, 0.5, 0, 0, 0],
                      [0, 0.25, 0.5, 0.25, 0, 0]]])


def test_local_m_empty_window_falls_back_to_last_real_token():
    m = DotAttention(1, 1, scope="local_m", window=1)
    k = scalar_keys(0.0, 0.0, LN2, 0.0, 0.0, 99.0)
    v = torch.arange(6.0)[None, :, None]
    out = m(torch.ones(1, 1, 1), m.prepare(k), v, real([5], 6), torch.tensor([[9]]))
    # t = 9, D = 1: window {8, 9, 10} holds no real token -> last real one (4), weight 1
    assert close(out.weights, [[[0, 0, 0, 0, 1.0, 0]]])
    assert close(out.context, [[[4.0]]])


# -- local-p ------------------------------------------------------------------
def test_local_p_gaussian_by_hand():
    m = DotAttention(1, 1, scope="local_p", window=1)
    with torch.no_grad():
        m.predictor.w_p.weight.zero_()                 # tanh(0) = 0, sigmoid(0) = 1/2
    k = scalar_keys(0.0, 0.0, LN2, 0.0, 99.0)          # S_len = 4, one pad
    out = m(torch.ones(1, 1, 1), m.prepare(k), k, real([4], 5))
    # p_t = S_len * 1/2 = 2; D = 1, sigma = 1/2; window {1, 2, 3}
    # softmax of [0, ln 2, 0] = [1/4, 1/2, 1/4]
    # Gaussian exp(-(s - 2)^2 / (2 * 1/4)) = [e^-2, 1, e^-2] = [0.135335, 1, 0.135335]
    # weights = [0.033834, 0.5, 0.033834], not renormalised (sum 0.567668)
    assert close(out.center, [[2.0]])
    assert close(out.weights, [[[0.0, 0.033834, 0.5, 0.033834, 0.0]]])
    assert math.isclose(float(out.weights.detach().sum()), 0.567668, abs_tol=1e-5)


def test_local_p_centre_by_hand_uses_real_length():
    m = DotAttention(2, 2, scope="local_p", window=1)
    with torch.no_grad():
        m.predictor.w_p.weight.copy_(torch.eye(2))
        m.predictor.v_p.weight.copy_(torch.tensor([[2 * math.log(3.0), 0.0]]))
    # query [atanh(1/2), 0]: tanh -> [1/2, 0]; v_p . [1/2, 0] = ln 3; sigmoid(ln 3) = 3/4
    q = torch.tensor([[[math.atanh(0.5), 0.0]]]).expand(2, 1, 2)
    k = torch.zeros(2, 6, 2)                                             # all scores 0
    out = m(q, m.prepare(k), k, real([5, 2], 6))
    # sentence 1: S_len 5 -> p = 3.75; sentence 2: S_len 2 -> p = 1.5
    assert close(out.center, [[3.75], [1.5]])
    # sentence 1: window [2.75, 4.75] -> {3, 4}, softmax of [0, 0] = [1/2, 1/2];
    #   Gaussian (sigma 1/2): s=3: exp(-0.75^2 / 0.5) = e^-1.125 = 0.324652,
    #   s=4: exp(-0.25^2 / 0.5) = e^-0.125 = 0.882497 -> [.., 0.162326, 0.441248, 0]
    # sentence 2: window [0.5, 2.5] -> {1, 2}, 2 is padding -> weight 1 at 1;
    #   Gaussian exp(-(1 - 1.5)^2 / 0.5) = e^-0.5 = 0.606531
    assert close(out.weights, [[[0, 0, 0, 0.162326, 0.441248, 0]],
                               [[0, 0.606531, 0, 0, 0, 0]]])


# -- hard ---------------------------------------------------------------------
def hard_case():
    m = DotAttention(2, 2, scope="hard")
    k = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [100.0, 0.0]]])          # third is padding
    v = torch.tensor([[[10.0, 0.0], [0.0, 20.0], [-7.0, -7.0]]])
    return m, k, v, real([2], 3)


def test_hard_eval_is_argmax_and_weights_are_alpha():
    m, k, v, mask = hard_case()
    m.eval()
    out = m(torch.tensor([[[1.0, 0.0]]]), m.prepare(k), v, mask)
    # alpha = softmax([1, 0]) = E1 over the two real tokens; argmax = 0
    assert close(out.weights, [[E1 + [0.0]]])
    assert close(out.context, [[[10.0, 0.0]]])                          # the value at 0
    assert close(out.log_prob, [[math.log(0.731059)]])                  # -0.313262


def test_hard_training_samples_follow_alpha():
    m, k, v, mask = hard_case()
    m.train()
    N = 4000
    q = torch.tensor([[[1.0, 0.0]]]).expand(N, 1, 2)
    torch.manual_seed(0)
    out = m(q, m.prepare(k.expand(N, 3, 2)), v.expand(N, 3, 2), mask.expand(N, 1, 3))
    picked_0 = out.context[:, 0, 0] == 10.0
    picked_1 = out.context[:, 0, 1] == 20.0
    assert bool((picked_0 ^ picked_1).all())          # always exactly one real value, never padding
    # frequency of position 0 ~ alpha_0 = 0.731059, std sqrt(.73 * .27 / 4000) = 0.007
    assert abs(float(picked_0.float().mean()) - 0.731059) < 0.03
    # log_prob = log alpha at the sample: log 0.731059 = -0.313262, log 0.268941 = -1.313262
    expected = torch.where(picked_0, torch.tensor(-0.313262), torch.tensor(-1.313262))
    assert torch.allclose(out.log_prob[:, 0], expected, atol=1e-5)
    assert close(out.weights[0], [E1 + [0.0]])          # heatmaps show alpha, not the sample


def test_hard_log_prob_carries_the_gradient_not_the_context():
    m, k, v, mask = hard_case()
    q = torch.tensor([[[1.0, 0.0]]], requires_grad=True)
    out = m(q, m.prepare(k), v, mask)
    assert not out.context.requires_grad
    out.log_prob.sum().backward()
    assert q.grad is not None and bool(q.grad.abs().sum() > 0)


def test_hard_multihead_log_prob_sums_heads_by_hand():
    m = MultiHeadDotAttention(2, 2, scope="hard", heads=2)
    with torch.no_grad():
        for w in (m.w_q, m.w_k, m.w_v, m.w_o):
            w.weight.copy_(torch.eye(2))
    m.eval()
    k = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    out = m(torch.tensor([[[1.0, 2.0]]]), m.prepare(k), k, real([2], 2))
    # head 1: softmax([1, 0]) -> argmax 0, alpha 0.731059; reads v_0[0] = 1
    # head 2: softmax([0, 2]) -> argmax 1, alpha 0.880797; reads v_1[1] = 1
    # log_prob = log 0.731059 + log 0.880797 = -0.313262 - 0.126928
    assert close(out.log_prob, [[-0.440190]])
    assert close(out.context, [[[1.0, 1.0]]])


# -- errors -------------------------------------------------------------------
def test_unknown_scope_lists_choices():
    with pytest.raises(NmtError) as err:
        GeneralAttention(2, 2, scope="locall")
    message = str(err.value)
    assert all(name in message for name in SCOPES) and "\n" not in message


@pytest.mark.parametrize("scope, window", [("local_m", -1), ("local_p", 0), ("local_m", 1.5)])
def test_bad_window(scope, window):
    with pytest.raises(NmtError, match="window"):
        GeneralAttention(2, 2, scope=scope, window=window)


# -- every score x every scope -------------------------------------------------
D = 4
FACTORIES = {
    "bahdanau": lambda s: AdditiveAttention(D, D, scope=s, window=1, hidden_dim=3),
    "luong_dot": lambda s: DotAttention(D, D, scope=s, window=1),
    "luong_general": lambda s: GeneralAttention(D, D, scope=s, window=1),
    "luong_concat": lambda s: ConcatAttention(D, D, scope=s, window=1, hidden_dim=3),
    "luong_location": lambda s: LocationAttention(D, D, scope=s, window=1, max_len=8),
    "scaled_dot": lambda s: ScaledDotAttention(D, D, scope=s, window=1),
    "cosine": lambda s: CosineAttention(D, D, scope=s, window=1, sharpness=3.0),
    "multihead": lambda s: MultiHeadDotAttention(D, D, scope=s, window=1, heads=2),
}
CASES = [(name, scope) for name in FACTORIES for scope in SCOPES]


def attend(module, query, keys, values, mask, seed=0):
    torch.manual_seed(seed)                           # hard samples alike on both calls
    return module(query, module.prepare(keys), values, mask, torch.tensor([[0, 3], [1, 2]]))


@pytest.mark.parametrize("name, scope", CASES)
def test_padding_gets_no_weight_and_changes_nothing(name, scope):
    torch.manual_seed(1)
    m = FACTORIES[name](scope).train()
    q, k, v = torch.randn(2, 2, D), torch.randn(2, 6, D), torch.randn(2, 6, D)
    mask = real([6, 3], 6)                            # sentence 2 has 3 pads
    before = attend(m, q, k, v, mask)
    assert isinstance(before, AttentionOutput)
    assert bool((before.weights[1, :, 3:] == 0).all())
    k2, v2 = k.clone(), v.clone()
    k2[1, 3:] = 100 * torch.randn(3, D)
    v2[1, 3:] = 100 * torch.randn(3, D)
    after = attend(m, q, k2, v2, mask)
    for a, b in zip(before, after):
        assert (a is None) == (b is None)
        if a is not None:
            assert torch.allclose(a, b, atol=1e-6)
    assert before.context.shape == (2, 2, m.output_size)
    assert before.weights.shape == (2, 2, 6)
    assert (before.log_prob is not None) == (scope == "hard")
    assert (before.center is not None) == (scope == "local_p")


@pytest.mark.parametrize("name, scope", CASES)
def test_gradients_flow(name, scope):
    torch.manual_seed(2)
    m = FACTORIES[name](scope).train()
    q = torch.randn(2, 2, D, requires_grad=True)
    k = torch.randn(2, 6, D, requires_grad=True)
    v = torch.randn(2, 6, D, requires_grad=True)
    out = attend(m, q, k, v, real([6, 4], 6))
    loss = out.context.sum() + out.weights.pow(2).sum()
    if out.log_prob is not None:
        loss = loss + out.log_prob.sum()
    loss.backward()
    for pname, p in m.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), pname
    assert torch.isfinite(q.grad).all() and bool(v.grad.abs().sum() > 0)
    if name != "luong_location":                      # location ignores the keys
        assert bool(k.grad.abs().sum() > 0)
