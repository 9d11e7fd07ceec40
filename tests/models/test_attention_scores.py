"""Every score of the RNN-decoder attentions, global scope, worked by hand."""

import math

import pytest
import torch

from nmt.base.errors import NmtError
from nmt.core.attention.bahdanau import AdditiveAttention
from nmt.core.attention.luong_concat import ConcatAttention
from nmt.core.attention.cosine import CosineAttention
from nmt.core.attention.location import LocationAttention
from nmt.core.multihead import MultiHeadDotAttention
from nmt.core.attention.luong_dot import DotAttention
from nmt.core.attention.luong_general import GeneralAttention
from nmt.core.attention.scaled_dot import ScaledDotAttention
from nmt.core.attention.cosine import cosine_score
from nmt.core.attention.luong_dot import dot_score
from nmt.core.normalisers.softmax import masked_softmax

# softmax([1, 0]) = [e/(e+1), 1/(e+1)]
E1 = [0.731059, 0.268941]
# softmax([2, 0]) = [e^2/(e^2+1), 1/(e^2+1)]
E2 = [0.880797, 0.119203]


def real(*lengths_and_size):
    """real(n, S): mask (1, 1, S) with the first n positions real."""
    n, S = lengths_and_size
    return (torch.arange(S) < n)[None, None, :]


def run(module, query, keys, values=None, mask=None):
    mask = real(keys.size(1), keys.size(1)) if mask is None else mask
    return module(query, module.prepare(keys), keys if values is None else values, mask)


def close(actual, expected, atol=1e-5):
    return torch.allclose(actual, torch.tensor(expected, dtype=actual.dtype), atol=atol)


def test_masked_softmax_and_dot_score_by_hand():
    q = torch.tensor([[[1.0, 0.0]]])                    # (1, 1, 2)
    k = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [9.0, 9.0]]])
    w = masked_softmax(dot_score(q, k), real(2, 3))
    # scores [1, 0, 9]; the third is padding -> [e/(e+1), 1/(e+1), 0]
    assert close(w, [[E1 + [0.0]]])
    assert w[0, 0, 2] == 0.0


def test_cosine_score_by_hand():
    q = torch.tensor([[[1.0, 0.0]]])
    k = torch.tensor([[[3.0, 0.0], [0.0, 2.0], [-5.0, 0.0], [0.0, 0.0]]])
    # parallel 1, orthogonal 0, opposite -1, zero vector 0 (not 0/0)
    assert close(cosine_score(q, k), [[[1.0, 0.0, -1.0, 0.0]]])


def test_dot_by_hand():
    m = DotAttention(2, 2)
    q = torch.tensor([[[1.0, 0.0]]])
    k = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    v = torch.tensor([[[2.0, 0.0], [0.0, 4.0]]])
    out = run(m, q, k, v)
    # scores [1, 0] -> E1; context = 0.731059 * [2, 0] + 0.268941 * [0, 4]
    assert close(out.weights, [[E1]])
    assert close(out.context, [[[1.462117, 1.075766]]])
    assert out.log_prob is None and out.center is None
    assert m.output_size == 2


def test_general_by_hand_with_different_sizes():
    m = GeneralAttention(query_dim=2, key_dim=3)
    with torch.no_grad():
        m.w_a.weight.copy_(torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))  # (Dq, Dk)
    q = torch.tensor([[[1.0, 0.0]]])
    k = torch.tensor([[[1.0, 5.0, 0.0], [0.0, 5.0, 1.0]]])
    out = run(m, q, k)
    # W h_1 = [2, 0], W h_2 = [0, 1]; s . W h = [2, 0] -> E2
    assert close(m.prepare(k), [[[2.0, 0.0], [0.0, 1.0]]])
    assert close(out.weights, [[E2]])
    # context = 0.880797 * h_1 + 0.119203 * h_2 (values have key_dim 3)
    assert close(out.context, [[[0.880797, 5.0, 0.119203]]])
    assert m.output_size == 3


def test_scaled_general_by_hand():
    # model.attention.scaled=true: score = h_t . (W_a h_s) / sqrt(d), d = query_dim = 4
    m = GeneralAttention(query_dim=4, key_dim=2, scaled=True)
    with torch.no_grad():
        m.w_a.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]))  # (Dq, Dk)
    q = torch.tensor([[[1.0, 1.0, 1.0, 0.0]]])
    k = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    # W h_1 = [1, 0, 1, 0], W h_2 = [0, 1, 0, 1]; s . W h = [2, 1]; / sqrt(4) -> [1, 0.5]
    assert close(m.score(q, m.prepare(k)), [[[1.0, 0.5]]])
    out = run(m, q, k)
    # softmax([1, 0.5]) = [e^0.5 / (e^0.5 + 1), 1 / (e^0.5 + 1)] = [0.622459, 0.377541]
    assert close(out.weights, [[[0.622459, 0.377541]]])
    unscaled = GeneralAttention(query_dim=4, key_dim=2)
    unscaled.load_state_dict(m.state_dict())          # the same W_a: the unscaled score is twice as large
    assert close(unscaled.score(q, unscaled.prepare(k)), [[[2.0, 1.0]]])


def test_bahdanau_by_hand():
    m = AdditiveAttention(2, 2, hidden_dim=2)
    with torch.no_grad():
        m.w_a.weight.copy_(torch.eye(2))
        m.u_a.weight.copy_(2 * torch.eye(2))
        m.v_a.weight.fill_(1.0)
    q = torch.tensor([[[1.0, 0.0]]])
    k = torch.tensor([[[0.0, 0.0], [0.5, 0.5]]])
    # prepare: U h = 2 h = [0, 0], [1, 1]
    assert close(m.prepare(k), [[[0.0, 0.0], [1.0, 1.0]]])
    # e_1 = tanh(1 + 0) + tanh(0 + 0) = 0.761594
    # e_2 = tanh(1 + 1) + tanh(0 + 1) = 0.964028 + 0.761594
    # a_2 = sigmoid(e_2 - e_1) = sigmoid(0.964028) = 0.723927
    out = run(m, q, k)
    assert close(out.weights, [[[0.276073, 0.723927]]])
    assert close(out.context, [[[0.361964, 0.361964]]])     # 0.723927 * 0.5


def test_luong_concat_by_hand():
    m = ConcatAttention(2, 2, hidden_dim=2)
    with torch.no_grad():
        m.w_a.weight.copy_(torch.cat([torch.eye(2), torch.eye(2)], 1))   # W_a = [I | I]
        m.v_a.weight.fill_(1.0)
    q = torch.tensor([[[1.0, 0.0]]])
    k = torch.tensor([[[0.0, 0.0], [1.0, 1.0]]])
    # W_a [s; h] = s + h: e_1 = tanh(1) + tanh(0), e_2 = tanh(2) + tanh(1)
    # a_2 = sigmoid(tanh(2)) = sigmoid(0.964028) = 0.723927
    out = run(m, q, k)
    assert close(out.weights, [[[0.276073, 0.723927]]])


def test_luong_location_by_hand():
    m = LocationAttention(2, 2, max_len=4)
    with torch.no_grad():
        m.w_a.weight.zero_()
        m.w_a.weight[0, 0] = 1.0                          # W_a s = [s_0, 0, 0, 0]
    q = torch.tensor([[[1.0, 7.0]]])
    k = torch.randn(1, 3, 2)
    out = run(m, q, k, mask=real(2, 3))
    # scores [1, 0, 0] cut to S = 3, the third padding -> [E1, 0]; keys play no part
    assert close(out.weights, [[E1 + [0.0]]])
    out2 = run(m, q, torch.randn(1, 3, 2), mask=real(2, 3))
    assert torch.equal(out.weights, out2.weights)


def test_luong_location_too_long_is_one_line_error():
    m = LocationAttention(2, 2, max_len=4)
    with pytest.raises(NmtError, match="max_len=4") as err:
        m.prepare(torch.zeros(1, 5, 2))
    assert "\n" not in str(err.value)


def test_scaled_dot_by_hand():
    m = ScaledDotAttention(4, 4)
    q = torch.tensor([[[1.0, 1.0, 0.0, 0.0]]])
    k = torch.tensor([[[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]])
    # s . h = [2, 0], / sqrt(4) = [1, 0] -> E1
    assert close(run(m, q, k).weights, [[E1]])


def test_cosine_fixed_sharpness_by_hand():
    m = CosineAttention(2, 2, sharpness=1.0, learn_sharpness=False)
    assert not any(p.numel() for p in m.parameters())     # beta is a fixed buffer
    q = torch.tensor([[[1.0, 0.0]]])
    k = torch.tensor([[[3.0, 0.0], [0.0, 2.0]]])
    # cosines [1, 0], beta 1 -> E1
    assert close(run(m, q, k).weights, [[E1]])


def test_cosine_learned_sharpness_and_projection_by_hand():
    m = CosineAttention(query_dim=3, key_dim=2, sharpness=2.0)
    assert isinstance(m.log_beta, torch.nn.Parameter)
    with torch.no_grad():
        m.project.weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    q = torch.tensor([[[5.0, 0.0, 7.0]]])                 # P q = [5, 0]
    k = torch.tensor([[[3.0, 0.0], [0.0, 2.0]]])
    # cosines [1, 0], beta 2 -> softmax([2, 0]) = E2
    assert close(run(m, q, k).weights, [[E2]])
    assert math.isclose(float(m.beta.detach()), 2.0, rel_tol=1e-6)


def test_multihead_by_hand():
    m = MultiHeadDotAttention(2, 2, heads=2)
    with torch.no_grad():
        for w in (m.w_q, m.w_k, m.w_v, m.w_o):
            w.weight.copy_(torch.eye(2))
    q = torch.tensor([[[1.0, 2.0]]])
    k = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    # head 1 reads dim 0, Dh = 1: scores [1*1, 1*0] / 1 = [1, 0] -> [0.731059, 0.268941]
    # head 2 reads dim 1: scores [2*0, 2*1] = [0, 2] -> [0.119203, 0.880797]
    heads = m.head_weights(q, m.prepare(k), real(2, 2))
    assert close(heads, [[[E1], [E2[::-1]]]])
    out = run(m, q, k)
    # weights = mean over heads = [(0.731059 + 0.119203) / 2, (0.268941 + 0.880797) / 2]
    assert close(out.weights, [[[0.425131, 0.574869]]])
    # head 1 context = a . [1, 0] = 0.731059; head 2 = a . [0, 1] = 0.880797; W_o = I
    assert close(out.context, [[[0.731059, 0.880797]]])


def test_multihead_matches_projecting_values_first():
    """W_v after the weighted sum equals Vaswani's H W_v before it."""
    torch.manual_seed(0)
    m = MultiHeadDotAttention(3, 4, heads=2)
    q, k = torch.randn(2, 3, 3), torch.randn(2, 5, 4)
    mask = torch.tensor([[[True] * 5], [[True] * 3 + [False] * 2]])
    out = m(q, m.prepare(k), k, mask)
    heads = m.head_weights(q, m.prepare(k), mask)                       # (B, H, T, S)
    v = m.w_v(k).view(2, 5, 2, 2).transpose(1, 2)                        # (B, H, S, Dh)
    ref = m.w_o((heads @ v).transpose(1, 2).reshape(2, 3, 4))
    assert torch.allclose(out.context, ref, atol=1e-6)


@pytest.mark.parametrize("cls, name", [(DotAttention, "luong_dot"),
                                       (ScaledDotAttention, "scaled_dot")])
def test_dot_scores_need_equal_sizes(cls, name):
    with pytest.raises(NmtError, match="luong_general") as err:
        cls(2, 3)
    assert name in str(err.value) and "\n" not in str(err.value)


def test_multihead_heads_must_divide():
    with pytest.raises(NmtError, match="heads=3"):
        MultiHeadDotAttention(4, 4, heads=3)


def test_cosine_sharpness_must_be_positive():
    with pytest.raises(NmtError, match="sharpness"):
        CosineAttention(2, 2, sharpness=0.0)
