"""The fused label-smoothed loss (nmt.speedups.fused_loss): the loss and its one-pass
gradient, by hand, against autograd, and against the core's plain loss it replaces
(nmt.core.loss.label_smoothed_nll)."""

import math

import pytest
import torch

from nmt.core.loss import label_smoothed_nll
from nmt.speedups.fused_loss import LabelSmoothedNLL, fused_label_smoothed_nll
from nmt.speedups.scratch import UpdateScratch

PAD = 0


def test_loss_and_gradient_by_hand():
    # z = log [1, 2, 1] -> p = [0.25, 0.5, 0.25]; label y = 1, eps = 0.3, V = 3
    logits = torch.tensor([[0.0, math.log(2.0), 0.0]], requires_grad=True)
    smoothed, nll = LabelSmoothedNLL.apply(logits, torch.tensor([1]), 0.3)
    # nll = -log 0.5 = 0.693147; mean_v -log p_v = (1.386294 + 0.693147 + 1.386294) / 3 = 1.155245
    # smoothed = 0.7 * 0.693147 + 0.3 * 1.155245 = 0.485203 + 0.346574 = 0.831777
    assert abs(float(nll) - 0.693147) < 1e-5 and abs(float(smoothed.detach()) - 0.831777) < 1e-5
    smoothed.sum().backward()
    # dL/dz = p - 0.7 [k = y] - 0.3 / 3 = [0.25 - 0.1, 0.5 - 0.7 - 0.1, 0.25 - 0.1]
    assert torch.allclose(logits.grad, torch.tensor([[0.15, -0.3, 0.15]]), atol=1e-6)
    assert not nll.requires_grad


def test_gradient_equals_autograd_of_the_formula():
    torch.manual_seed(0)
    logits = torch.randn(6, 11, dtype=torch.float64)
    labels = torch.randint(0, 11, (6,))
    weights = torch.rand(6, dtype=torch.float64)      # upstream gradient, as padding zeros give
    weights[2] = 0.0
    ours = logits.clone().requires_grad_()
    (LabelSmoothedNLL.apply(ours, labels, 0.1)[0] * weights).sum().backward()
    reference = logits.clone().requires_grad_()
    log_p = reference.log_softmax(-1)
    loss = 0.9 * -log_p.gather(-1, labels[:, None])[:, 0] - 0.1 * log_p.mean(-1)
    (loss * weights).sum().backward()
    assert ours.grad.dtype == torch.float64
    assert torch.allclose(ours.grad, reference.grad, atol=1e-6)   # forward runs in float32
    assert torch.equal(ours.grad[2], torch.zeros(11, dtype=torch.float64))


def test_a_label_whose_probability_underflows_gets_the_exact_loss():
    # z = [0, -120, 5]: p_1 = e^-120 / (1 + e^-120 + e^5) = 5e-55 is 0 in float32 (-log 0 = inf);
    # its nll is logsumexp(z) - z_1 = log(1 + e^-120 + e^5) + 120 = 5.006715 + 120 = 125.006715
    logits = torch.tensor([[0.0, -120.0, 5.0], [0.0, 0.0, 0.0]], requires_grad=True)
    smoothed, nll = LabelSmoothedNLL.apply(logits, torch.tensor([1, 0]), 0.3)
    assert abs(float(nll[0]) - 125.006715) < 1e-3 and abs(float(nll[1]) - math.log(3)) < 1e-6
    # mean_v -log p_v = logsumexp - mean(z) = 5.006715 + 115 / 3 = 43.340048
    # smoothed = 0.7 * 125.006715 + 0.3 * 43.340048 = 87.504700 + 13.002014 = 100.506715
    assert abs(float(smoothed[0].detach()) - 100.506715) < 1e-3
    smoothed.sum().backward()
    assert torch.isfinite(logits.grad).all()


def test_inside_a_cuda_graph_the_underflow_fallback_is_chosen_without_a_host_read(monkeypatch):
    """While a CUDA graph is recorded, the rows where p_y underflows are chosen by torch.where,
    never by reading the device: the same losses (the hand values above) and gradients."""
    from nmt.speedups import fused_loss as label_smoothing

    logits = torch.tensor([[0.0, -120.0, 5.0], [0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    labels = torch.tensor([1, 0, 2])
    eager = [t.detach() for t in LabelSmoothedNLL.apply(logits, labels, 0.3)]
    monkeypatch.setattr(label_smoothing, "capturing", lambda tensor: True)
    monkeypatch.setattr(torch.Tensor, "__bool__", lambda self: pytest.fail("the device was read"))
    recorded = LabelSmoothedNLL.apply(logits.clone().requires_grad_(), labels, 0.3)
    monkeypatch.undo()
    assert abs(float(recorded[1][0]) - 125.006715) < 1e-3
    for a, b in zip(eager, recorded):
        assert torch.equal(a, b.detach())


def test_its_backward_runs_once():
    """The backward scales the saved probabilities in place: a second backward
    through the same graph is an error, not a wrong gradient."""
    import pytest

    logits = torch.randn(3, 5, requires_grad=True)
    smoothed, _ = LabelSmoothedNLL.apply(logits, torch.tensor([0, 1, 2]), 0.1)
    smoothed.sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        smoothed.sum().backward()


def test_the_scratch_gives_the_same_floats_and_is_reused():
    """With an UpdateScratch: the loss, NLL and gradient bit for bit as without it;
    one buffer across batches, grown only for a larger one."""
    scratch = UpdateScratch()
    torch.manual_seed(1)
    for rows in (40, 25, 60):
        logits = (torch.randn(rows, 97) * 5).requires_grad_()
        labels = torch.randint(0, 97, (rows,))
        results = []
        for use in (None, scratch):
            smoothed, nll = LabelSmoothedNLL.apply(logits, labels, 0.1, use)
            (grad,) = torch.autograd.grad(smoothed.sum(), logits)
            results.append((smoothed.detach(), nll, grad))
        for plain, reused in zip(*results):
            assert torch.equal(plain.view(torch.int32), reused.view(torch.int32))
        if rows == 25:
            assert scratch.buffer.numel() == 40 * 97        # the first batch's buffer, reused
    assert scratch.buffer.numel() == 60 * 97


def test_two_losses_before_one_backward_do_not_share_the_scratch():
    """The first loss's probabilities are still saved for its backward: the second
    loss gets fresh memory, and both gradients are right."""
    scratch = UpdateScratch()
    torch.manual_seed(2)
    logits = torch.randn(8, 13, requires_grad=True)
    labels = torch.randint(0, 13, (8,))
    first, _ = LabelSmoothedNLL.apply(logits, labels, 0.1, scratch)
    second, _ = LabelSmoothedNLL.apply(logits * 2, labels, 0.1, scratch)
    (got,) = torch.autograd.grad(first.sum() + second.sum(), logits)
    plain = LabelSmoothedNLL.apply(logits, labels, 0.1)[0].sum() + LabelSmoothedNLL.apply(logits * 2, labels, 0.1)[0].sum()
    (expected,) = torch.autograd.grad(plain, logits)
    assert torch.equal(got, expected)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_it_gives_the_core_losses_and_gradients(smoothing):
    """The speedup against the plain piece it replaces: the smoothed loss and the NLL per
    token (B, T), 0 on padding, and the gradient of the summed loss, equal to float32
    rounding (the sums run in another order); the NLL is not differentiable in either."""
    torch.manual_seed(3)
    logits = (torch.randn(3, 5, 17) * 3).requires_grad_()
    labels = torch.tensor([[4, 2, 9, 0, 0], [16, 1, 1, 3, 0], [5, 6, 7, 8, 2]])
    plain_logits = logits.detach().clone().requires_grad_()
    fused, fused_nll = fused_label_smoothed_nll(logits, labels, PAD, smoothing, UpdateScratch())
    plain, plain_nll = label_smoothed_nll(plain_logits, labels, PAD, smoothing)
    torch.testing.assert_close(fused, plain, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(fused_nll, plain_nll, rtol=1e-6, atol=1e-6)
    assert (fused[labels == PAD] == 0).all() and not fused_nll.requires_grad and not plain_nll.requires_grad
    (fused.sum() / 10).backward()
    (plain.sum() / 10).backward()
    torch.testing.assert_close(logits.grad, plain_logits.grad, rtol=1e-5, atol=1e-7)
    assert torch.equal(logits.grad[labels == PAD], torch.zeros(3, 17))     # padding gets no gradient
