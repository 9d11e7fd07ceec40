"""nmt.core.step.train_step: one update by hand (gradient, clipping, the optimiser's step),
gradient accumulation as one large batch, and a non-finite loss skipped."""

import math
from types import SimpleNamespace

import pytest
import torch

from nmt.core.loss import Counts, LossWeights, training_loss
from nmt.core.step import train_step, update_counts

PAD = 0


class Logits(torch.nn.Module):
    """A "model" whose output is one learned row of logits per target position: z (T, V)."""

    def __init__(self, T: int, V: int):
        super().__init__()
        self.z = torch.nn.Parameter(torch.zeros(T, V))

    def forward(self, batch):
        B = batch.tgt.size(0)
        return SimpleNamespace(logits=self.z.expand(B, -1, -1), log_prob=None), 0.0   # (B, T, V)


def batch(*targets):
    """Sentences of label ids (0 = padding), each after bos (id 2), and 3 source tokens each."""
    tgt = torch.tensor([[2, *t] for t in targets])                        # (B, T + 1)
    return SimpleNamespace(src=torch.ones(len(targets), 3, dtype=torch.long), tgt=tgt, alignment=None,
                           n_src_tokens=3 * len(targets), n_tgt_tokens=sum(x != 0 for t in targets for x in t))


def plain_loss(smoothing=0.0):
    def loss(b, out, penalty, counts):
        return training_loss(out, b.tgt[:, 1:], PAD, LossWeights(smoothing), counts, penalty=penalty)
    return loss


def test_one_update_by_hand():
    # z = [0, 0] over V = 2, label 1: p = [0.5, 0.5], loss log 2 = 0.693147,
    # dL/dz = p - onehot = [0.5, -0.5], norm sqrt(0.5) = 0.707107; SGD lr 1: z = [-0.5, 0.5]
    model = Logits(1, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    result = train_step(model, [batch([1])], model, plain_loss(), optimizer)
    assert result["finite"] and result["tgt_tokens"] == 1 and result["src_tokens"] == 3
    assert result["loss"] == pytest.approx(math.log(2)) and result["nll"] == pytest.approx(math.log(2))
    assert result["grad_norm"] == pytest.approx(math.sqrt(0.5))
    assert model.z.tolist() == [[pytest.approx(-0.5), pytest.approx(0.5)]]


def test_clipping_scales_the_gradient_to_the_largest_norm():
    # the gradient above, norm 0.707107, clipped to 0.5: z = -0.5 / 0.707107 * [0.5, -0.5] = [-0.353553, 0.353553]
    model = Logits(1, 2)
    result = train_step(model, [batch([1])], model, plain_loss(), torch.optim.SGD(model.parameters(), lr=1.0),
                        grad_clip=0.5)
    assert result["grad_norm"] == pytest.approx(math.sqrt(0.5))          # the norm before clipping
    assert model.z.tolist() == [[pytest.approx(-0.353553, abs=1e-6), pytest.approx(0.353553, abs=1e-6)]]


def test_accumulated_batches_give_the_update_of_one_batch_of_all():
    """Each loss divided by the update's tokens: two batches (3 and 2 real tokens) step
    as their union does, with label smoothing."""
    torch.manual_seed(0)
    first, second, both = batch([1, 2, 3], [4, 0, 0]), batch([2, 2, 0]), batch([1, 2, 3], [4, 0, 0], [2, 2, 0])
    assert update_counts([first, second]) == Counts(tokens=6, sentences=3, linked=0)
    models = [Logits(3, 5), Logits(3, 5)]
    with torch.no_grad():
        models[0].z.normal_()
        models[1].z.copy_(models[0].z)
    split = train_step(models[0], [first, second], models[0], plain_loss(0.1),
                       torch.optim.SGD(models[0].parameters(), lr=0.5))
    whole = train_step(models[1], [both], models[1], plain_loss(0.1), torch.optim.SGD(models[1].parameters(), lr=0.5))
    assert split["loss"] == pytest.approx(whole["loss"]) and split["nll"] == pytest.approx(whole["nll"])
    assert split["grad_norm"] == pytest.approx(whole["grad_norm"])
    torch.testing.assert_close(models[0].z, models[1].z)


def test_a_non_finite_loss_skips_the_update():
    model = Logits(1, 2)
    with torch.no_grad():
        model.z[0, 0] = float("nan")
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    optimizer.step = lambda: pytest.fail("stepped on a NaN loss")
    assert train_step(model, [batch([1])], model, plain_loss(), optimizer) == {"finite": False}
    assert model.z.grad is None and model.z[0, 1].item() == 0.0           # the weights as they were
