"""nmt.core.loss: each term and their sum, on numbers computed by hand."""

import math
from types import SimpleNamespace

import pytest
import torch

from nmt.core.loss import (Counts, LossWeights, coverage_loss, guided_alignment_loss, hard_attention_loss,
                           label_smoothed_nll, training_loss)

PAD = 0


def test_label_smoothing_by_hand():
    # logits give p = [0.25, 0.5, 0.25], label 1, eps 0.3: nll = -log 0.5 = 0.693147;
    # mean_v -log p_v = (1.386294 + 0.693147 + 1.386294) / 3 = 1.155245;
    # smoothed = 0.7 * 0.693147 + 0.3 * 1.155245 = 0.485203 + 0.346574 = 0.831777
    logits = torch.tensor([[[math.log(0.25), math.log(0.5), math.log(0.25)]]])
    smoothed, nll = label_smoothed_nll(logits, torch.tensor([[1]]), PAD, 0.3)
    assert smoothed.item() == pytest.approx(0.831777, abs=1e-6)
    assert nll.item() == pytest.approx(0.693147, abs=1e-6)
    assert not nll.requires_grad


def test_the_loss_is_the_mean_over_real_tokens_by_hand_and_ignores_padded_logits():
    # uniform logits over V = 4: the NLL of any label is log 4, padding 0
    logits = torch.zeros(1, 3, 4, requires_grad=True)
    labels = torch.tensor([[1, 2, PAD]])
    smoothed, nll = label_smoothed_nll(logits, labels, PAD, 0.1)
    assert smoothed[0].tolist() == pytest.approx([math.log(4), math.log(4), 0.0])
    assert nll[0].tolist() == pytest.approx([math.log(4), math.log(4), 0.0])
    changed = logits.detach().clone()
    changed[0, 2] = torch.tensor([100.0, -50.0, 3.0, 0.0])     # a padded position: any value
    assert torch.equal(label_smoothed_nll(changed, labels, PAD, 0.1)[0], smoothed.detach())
    smoothed.sum().backward()
    assert torch.equal(logits.grad[0, 2], torch.zeros(4))       # and no gradient


def test_it_is_pytorchs_label_smoothed_cross_entropy():
    torch.manual_seed(0)
    logits = torch.randn(3, 4, 7)
    labels = torch.tensor([[1, 2, 3, 0], [4, 0, 0, 0], [6, 5, 1, 2]])
    smoothed, nll = label_smoothed_nll(logits, labels, PAD, 0.2)
    reference = torch.nn.functional.cross_entropy(logits.reshape(-1, 7), labels.reshape(-1), ignore_index=PAD,
                                                  label_smoothing=0.2, reduction="none").view(3, 4)
    plain = torch.nn.functional.cross_entropy(logits.reshape(-1, 7), labels.reshape(-1), ignore_index=PAD,
                                              reduction="none").view(3, 4)
    torch.testing.assert_close(smoothed, reference)
    torch.testing.assert_close(nll, plain)


def test_coverage_loss_by_hand():
    # t=0: a = [0.7, 0.3], c = [0, 0]: 0;  t=1: a = [0.4, 0.6], c = [0.7, 0.3]: 0.4 + 0.3 = 0.7
    weights = torch.tensor([[[0.7, 0.3], [0.4, 0.6]]])
    coverage = torch.tensor([[[0.0, 0.0], [0.7, 0.3]]])
    assert coverage_loss(weights, coverage, torch.tensor([[5, 6]]), PAD).item() == pytest.approx(0.7)
    assert coverage_loss(weights, coverage, torch.tensor([[5, PAD]]), PAD).item() == 0.0   # padding: not counted


def test_guided_alignment_loss_by_hand():
    # t=0 linked to s=0 (G = [1, 0]): -log 0.7 = 0.356675; t=1 has no link (a zero row)
    attention = torch.tensor([[[0.7, 0.3], [0.4, 0.6]]])
    guide = torch.tensor([[[1.0, 0.0], [0.0, 0.0]]])
    total, linked = guided_alignment_loss(attention, guide)
    assert (total.item(), linked) == (pytest.approx(0.356675, abs=1e-6), 1)
    total, _ = guided_alignment_loss(torch.tensor([[[0.0, 1.0]]]), torch.tensor([[[1.0, 0.0]]]))
    assert total.item() == pytest.approx(-math.log(1e-9), rel=1e-5)     # a zero weight: large, finite


def test_hard_attention_term_by_hand():
    # rewards = -nll = [-1, -3], baseline -2: advantages [+1, -1];
    # surrogate = -(1 * -0.5 + (-1) * -0.2) / 2 = 0.15; mean reward -2
    log_prob = torch.tensor([[-0.5, -0.2]], requires_grad=True)
    surrogate, reward = hard_attention_loss(log_prob, torch.tensor([[1.0, 3.0]]), torch.tensor([[5, 6]]), PAD,
                                            baseline=-2.0)
    assert (surrogate.item(), reward) == (pytest.approx(0.15), pytest.approx(-2.0))
    surrogate.backward()
    # raising the log-probability of the better-than-baseline sample lowers the loss
    assert log_prob.grad[0, 0] < 0 < log_prob.grad[0, 1]


def test_training_loss_sums_the_four_terms_by_hand():
    """One sentence of two real tokens in an update of 4 tokens, 2 sentences, 2 linked positions.

    smoothed: t=0 p = [0.25, 0.5, 0.25], label 1, eps 0.3: 0.831777; t=1 uniform over 3,
      label 2: log 3 = 1.098612 (smoothing changes nothing); (0.831777 + 1.098612) / 4 = 0.482597
    penalty 0.5 * 1 sentence / 2 = 0.25
    coverage 0.7 / 4 = 0.175, weight 0.2: 0.035
    guided -log 0.7 / 2 linked = 0.178337, weight 0.5: 0.089169
    hard: rewards [-0.693147, -1.098612], baseline -1: advantages [0.306853, -0.098612];
      surrogate -(0.306853 * -0.5 + -0.098612 * -0.2) / 2 = 0.066852, * 1 / 2 sentences = 0.033426
    total 0.482597 + 0.25 + 0.035 + 0.089169 + 0.033426 = 0.890192
    """
    logits = torch.tensor([[[math.log(0.25), math.log(0.5), math.log(0.25)], [0.0, 0.0, 0.0]]],
                          requires_grad=True)
    attention = torch.tensor([[[0.7, 0.3], [0.4, 0.6]]])
    log_prob = torch.tensor([[-0.5, -0.2]], requires_grad=True)
    out = SimpleNamespace(logits=logits, weights=attention, coverage=torch.tensor([[[0.0, 0.0], [0.7, 0.3]]]),
                          log_prob=log_prob)
    terms = training_loss(out, torch.tensor([[1, 2]]), PAD, LossWeights(smoothing=0.3, coverage=0.2, guided=0.5),
                          Counts(tokens=4, sentences=2, linked=2), penalty=torch.tensor(0.5), attention=attention,
                          guide=torch.tensor([[[1.0, 0.0], [0.0, 0.0]]]), baseline=-1.0)
    assert terms.loss.item() == pytest.approx(0.890192, abs=1e-5)
    assert terms.nll[0].tolist() == pytest.approx([0.693147, 1.098612], abs=1e-6)
    assert terms.terms == {"coverage_loss": pytest.approx(0.175), "guided_alignment_loss": pytest.approx(0.178337, abs=1e-6)}
    assert terms.reward == pytest.approx(-0.895880, abs=1e-6)
    terms.loss.backward()
    assert logits.grad is not None and log_prob.grad is not None


def test_without_the_extra_terms_it_is_the_smoothed_mean():
    """Weights 0 and no hard attention: only the label-smoothed sum over the update's tokens,
    the extra inputs not read (None)."""
    logits = torch.zeros(2, 2, 4)
    out = SimpleNamespace(logits=logits, weights=None, coverage=None, log_prob=None)
    terms = training_loss(out, torch.tensor([[1, 2], [3, PAD]]), PAD, LossWeights(0.1), Counts(tokens=6, sentences=2))
    assert terms.loss.item() == pytest.approx(3 * math.log(4) / 6)
    assert (terms.terms, terms.reward) == ({}, None)
