import math

import pytest
import torch

from nmt.training.loss import reinforce_loss, smoothed_loss, token_nll

PAD = 0


def test_loss_ignores_padded_logits():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 5)
    labels = torch.tensor([[4, 2, 0], [3, 0, 0]])
    before, n = smoothed_loss(logits, labels, PAD, 0.1)
    changed = logits.clone()
    changed[0, 2] = 100.0          # padded positions: any value
    changed[1, 1:] = -50.0
    after, _ = smoothed_loss(changed, labels, PAD, 0.1)
    assert n == 3
    assert torch.allclose(before, after)


def test_loss_is_the_mean_over_real_tokens_by_hand():
    # uniform logits over V=4: NLL of any label is log 4, padding excluded
    logits = torch.zeros(1, 3, 4)
    labels = torch.tensor([[1, 2, 0]])
    loss, n = smoothed_loss(logits, labels, PAD, 0.0)
    assert n == 2
    assert loss.item() == pytest.approx(math.log(4))


def test_label_smoothing_by_hand():
    # logits give p = [0.5, 0.25, 0.25] (log-probs via log of these), label 0, eps 0.3:
    # target q = (1 - eps) one-hot + eps / V = [0.8, 0.1, 0.1]
    # loss = -(0.8 log .5 + 0.1 log .25 + 0.1 log .25) = 0.8*0.6931 + 0.2*1.3863 = 0.8318
    logits = torch.tensor([[[math.log(0.5), math.log(0.25), math.log(0.25)]]])
    loss = token_nll(logits, torch.tensor([[0]]), pad_id=-100, smoothing=0.3)
    assert loss.item() == pytest.approx(0.8318, abs=1e-4)


def test_reinforce_surrogate_by_hand():
    # rewards = -nll = [-1, -3], baseline -2: advantages [+1, -1]
    # surrogate = -(1 * log p1 + (-1) * log p2) / 2 with log p = [-0.5, -0.2]
    log_prob = torch.tensor([[-0.5, -0.2]], requires_grad=True)
    nll = torch.tensor([[1.0, 3.0]])
    surrogate, reward = reinforce_loss(log_prob, nll, torch.tensor([[5, 6]]), PAD, baseline=-2.0)
    assert surrogate.item() == pytest.approx(-(1 * -0.5 + -1 * -0.2) / 2)
    assert reward == pytest.approx(-2.0)
    surrogate.backward()
    # raising the log-probability of the better-than-baseline sample lowers the loss
    assert log_prob.grad[0, 0] < 0 < log_prob.grad[0, 1]


def test_token_losses_agree_with_cross_entropy_and_ignore_padding():
    from nmt.training.loss import token_losses
    torch.manual_seed(0)
    logits = torch.randn(3, 4, 7)
    labels = torch.tensor([[1, 2, 3, 0], [4, 0, 0, 0], [6, 5, 1, 2]])
    smoothed, nll = token_losses(logits, labels, PAD, 0.2)
    assert torch.allclose(smoothed, token_nll(logits, labels, PAD, 0.2), atol=1e-6)
    assert torch.allclose(nll, token_nll(logits, labels, PAD, 0.0), atol=1e-6)
    assert (smoothed[labels == PAD] == 0).all() and (nll[labels == PAD] == 0).all()
    assert not nll.requires_grad


def test_token_losses_label_smoothing_by_hand():
    from nmt.training.loss import token_losses
    # same numbers as test_label_smoothing_by_hand: 0.8318 smoothed, -log 0.5 = 0.6931 plain
    logits = torch.tensor([[[math.log(0.5), math.log(0.25), math.log(0.25)]]])
    smoothed, nll = token_losses(logits, torch.tensor([[0]]), pad_id=-100, smoothing=0.3)
    assert smoothed.item() == pytest.approx(0.8318, abs=1e-4)
    assert nll.item() == pytest.approx(math.log(2), abs=1e-6)
