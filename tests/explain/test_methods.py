"""Each nmt.explain method against numbers computed by hand, on objectives,
attention matrices and vectors small enough to work out on paper."""

import math

import pytest
import torch

from nmt.base.errors import NmtError
from nmt.explain import METHODS, check_method
from nmt.explain.input_x_gradient import input_x_gradient
from nmt.explain.integrated_gradients import integrated_gradients
from nmt.explain.objective import Objective
from nmt.explain.rollout import encoder_rollout, rollout
from nmt.explain.saliency import saliency
from nmt.explain.scores import normalised_rows
from nmt.explain.top_k import mean_probabilities, top_k
from nmt.explain.value_norm import rnn_value_norm, value_norm, value_vectors



def close(tensor, expected, tol: float = 1e-5) -> bool:
    return torch.allclose(tensor.float(), torch.tensor(expected, dtype=torch.float32), rtol=tol, atol=tol)


E = torch.tensor([[[3.0, 4.0], [1.0, 2.0]]])          # (1, S=2, E=2): e_1 = (3, 4), e_2 = (1, 2)


def linear_objective() -> Objective:
    """f_0(e) = w . e with w_1 = (2, 0), w_2 = (1, 1): one target token."""
    w = torch.tensor([[[2.0, 0.0], [1.0, 1.0]]])      # (T=1, S, E)
    return Objective(lambda emb, rows: (emb * w[rows]).sum((1, 2)), E, 1)


def square_objective() -> Objective:
    """f_0(e) = ||e_1||^2 (token 2 unused): gradient 2 e_1."""
    return Objective(lambda emb, rows: (emb[:, 0] ** 2).sum(-1), E, 1)


def test_saliency_of_a_linear_model_is_the_weights_norm():
    # d f / d e_j = w_j: ||(2, 0)|| = 2, ||(1, 1)|| = sqrt 2
    assert close(saliency(linear_objective()), [[2.0, math.sqrt(2)]])


def test_saliency_of_a_square_is_twice_the_input():
    # d ||e_1||^2 / d e_1 = 2 e_1 = (6, 8): norm 10; e_2 has no effect
    assert close(saliency(square_objective()), [[10.0, 0.0]])


def test_input_x_gradient_of_a_linear_model():
    # e_1 * w_1 = (6, 0): 6; e_2 * w_2 = (1, 2): sqrt 5
    assert close(input_x_gradient(linear_objective()), [[6.0, math.sqrt(5)]])
    # square: e_1 * 2 e_1 = (18, 32): sqrt(324 + 1024)
    assert close(input_x_gradient(square_objective()), [[math.sqrt(1348), 0.0]])


def test_integrated_gradients_are_exact_on_polynomials_and_complete():
    # linear: IG_j = e_j * w_j, as input x gradient; completeness gap 0
    scores, gap = integrated_gradients(linear_objective())
    assert close(scores, [[6.0, math.sqrt(5)]])
    assert gap.abs().max() < 1e-4
    # square: IG_d = e_d * integral_0^1 2 a e_d da = e_d^2 = (9, 16): sqrt(81 + 256); sum 25 = f(e) - f(0)
    scores, gap = integrated_gradients(square_objective())
    assert close(scores, [[math.sqrt(337), 0.0]])
    assert gap.abs().max() < 1e-3


def test_rows_of_targets_are_their_own():
    """Two target tokens in one batch: row t's gradient is f_t's alone."""
    w = torch.tensor([[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 3.0]]])    # f_0 reads e_1, f_1 reads e_2
    objective = Objective(lambda emb, rows: (emb * w[rows]).sum((1, 2)), E, 2)
    assert close(saliency(objective), [[1.0, 0.0], [0.0, 3.0]])
    assert close(integrated_gradients(objective)[0], [[3.0, 0.0], [0.0, 6.0]])


def test_normalised_rows_sum_to_one_and_zero_rows_stay_zero():
    out = normalised_rows(torch.tensor([[1.0, 3.0], [0.0, 0.0]]))
    assert out.tolist() == [[0.25, 0.75], [0.0, 0.0]]


def test_encoder_rollout_by_hand():
    # A = [[1, 0], [.5, .5]] -> 0.5 A + 0.5 I = [[1, 0], [.25, .75]]; two layers: its square
    layer = torch.tensor([[[1.0, 0.0], [0.5, 0.5]]])                # (H=1, S, S)
    assert encoder_rollout(layer[None]).tolist() == [[1.0, 0.0], [0.25, 0.75]]
    assert close(encoder_rollout(torch.stack([layer, layer])), [[1.0, 0.0], [0.4375, 0.5625]])
    # heads are averaged: [[1, 0], [1, 0]] and [[0, 1], [0, 1]] -> mean [[.5, .5], [.5, .5]]
    heads = torch.tensor([[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [0.0, 1.0]]])
    assert encoder_rollout(heads[None]).tolist() == [[0.75, 0.25], [0.25, 0.75]]


def test_encoder_decoder_rollout_by_hand():
    encoder = torch.tensor([[[[1.0, 0.0], [0.5, 0.5]]]])           # (1, 1, 2, 2): R = [[1, 0], [.25, .75]]
    decoder_self = torch.ones(2, 1, 1, 1)                          # T = 1: a token attends to itself
    cross = torch.tensor([[[[0.0, 1.0]]], [[[1.0, 0.0]]]])         # (2, 1, 1, 2)
    # layer 1: X = 0.5 (C_1 R) = 0.5 (.25, .75); layer 2: X = 0.5 X + 0.5 C_2 R = (.0625 + .5, .1875)
    assert rollout(encoder, decoder_self, cross[:1]).tolist() == [[0.125, 0.375]]
    assert close(rollout(encoder, decoder_self, cross), [[0.5625, 0.1875]])


def test_decoder_self_attention_carries_the_source_share_of_earlier_rows():
    """T = 2, one layer: row 2's self-attention reads row 1's state, whose source share is 0."""
    encoder = torch.zeros(0, 1, 2, 2)                              # no encoder layers: R = I
    decoder_self = torch.tensor([[[[1.0, 0.0], [0.5, 0.5]]]])       # (1, 1, 2, 2)
    cross = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]]]])             # (1, 1, 2, 2)
    # self: X = M 0 = 0; cross: X = 0.5 C = [[.5, 0], [0, .5]]
    assert rollout(encoder, decoder_self, cross).tolist() == [[0.5, 0.0], [0.0, 0.5]]
    two = torch.cat([decoder_self, decoder_self]), torch.cat([cross, cross])
    # layer 2 self: M = [[1, 0], [.25, .75]]: X = M [[.5, 0], [0, .5]] = [[.5, 0], [.125, .375]];
    # cross: X = 0.5 X + 0.5 C = [[.75, 0], [.0625, .6875]]
    assert close(rollout(encoder, *two), [[0.75, 0.0], [0.0625, 0.6875]])


def test_value_norm_of_one_head_by_hand():
    # W_V = I, b_V = 0, W_O = [[0, 2], [1, 0]]: f(x_1) = W_O (1, 0) = (0, 1), f(x_2) = (2, 0)
    states = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    vectors = value_vectors(states, torch.eye(2), None, torch.tensor([[0.0, 2.0], [1.0, 0.0]]), heads=1)
    assert vectors.tolist() == [[[0.0, 1.0], [2.0, 0.0]]]
    # alpha = (.5, .5): ||.5 (0, 1)|| = .5, ||.5 (2, 0)|| = 1: equal weights, unequal norms
    assert value_norm(torch.tensor([[[0.5, 0.5]]]), vectors).tolist() == [[0.5, 1.0]]


def test_value_norm_sums_the_heads_before_the_norm():
    # D = 2, two heads of one dimension; W_V = I, b_V = (1, 0): v(x_1) = (2, 0), v(x_2) = (1, 1)
    # W_O = diag(1, 3): f_1(x) = (v_1, 0), f_2(x) = (0, 3 v_2)
    states = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    vectors = value_vectors(states, torch.eye(2), torch.tensor([1.0, 0.0]), torch.tensor([[1.0, 0.0], [0.0, 3.0]]),
                            heads=2)
    assert vectors.tolist() == [[[2.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 3.0]]]
    # alpha_1 = (1, 0), alpha_2 = (.5, .5): token 1: 1 (2, 0) + .5 (0, 0) -> 2; token 2: 0 + .5 (0, 3) -> 1.5
    weights = torch.tensor([[[1.0, 0.0]], [[0.5, 0.5]]])           # (H, T=1, S)
    assert value_norm(weights, vectors).tolist() == [[2.0, 1.5]]


def test_rnn_value_norm_is_weight_times_state_norm():
    # ||(3, 4)|| = 5, ||(0, 1)|| = 1: (.2 * 5, .8 * 1)
    out = rnn_value_norm(torch.tensor([[0.2, 0.8]]), torch.tensor([[3.0, 4.0], [0.0, 1.0]]))
    assert close(out, [[1.0, 0.8]])


def test_top_k_by_hand():
    rows = top_k(torch.tensor([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3]]), torch.tensor([2, 0]), 2)
    assert rows[0] == {"ids": [1, 2], "p": pytest.approx([0.6, 0.3]), "chosen_p": pytest.approx(0.3),
                       "chosen_rank": 2}
    assert rows[1]["ids"] == [0, 2] and rows[1]["chosen_rank"] == 1
    assert len(top_k(torch.tensor([[0.5, 0.5]]), torch.tensor([0]), 9)[0]["ids"]) == 2    # k capped at V


def test_an_ensemble_averages_probabilities_not_logits():
    # softmax(0, 0) = (.5, .5); softmax(ln 3, 0) = (.75, .25): mean (.625, .375)
    probs = mean_probabilities([torch.zeros(1, 2), torch.tensor([[math.log(3), 0.0]])])
    assert close(probs, [[0.625, 0.375]])


def test_an_unknown_method_is_one_line_listing_them():
    with pytest.raises(NmtError) as error:
        check_method("lime")
    assert str(error.value) == ("--explain lime: unknown method; choose one of saliency, input-x-gradient, "
                                "integrated-gradients, rollout, value-norm")
    assert all(check_method(m) == m for m in METHODS)
