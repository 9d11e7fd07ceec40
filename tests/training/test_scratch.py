"""UpdateScratch: kept memory handed out only while nothing else refers to it."""

import torch

from nmt.training.scratch import UpdateScratch, storage_references


def test_the_memory_is_reused_once_the_tensor_taken_is_gone():
    scratch = UpdateScratch()
    first = scratch.take((30, 40))
    address = first.data_ptr()
    del first
    second = scratch.take((20, 40))                  # smaller: the same memory
    assert second.data_ptr() == address and second.shape == (20, 40)
    del second
    third = scratch.take((50, 40))                   # larger: the buffer grows and is kept
    assert scratch.buffer.numel() == 50 * 40 and third.data_ptr() == scratch.buffer.data_ptr()


def test_a_tensor_still_held_is_never_written_over():
    scratch = UpdateScratch()
    held = scratch.take((4, 5)).fill_(7.0)
    other = scratch.take((4, 5)).fill_(-1.0)         # fresh memory while `held` lives
    assert other.data_ptr() != held.data_ptr()
    assert torch.equal(held, torch.full((4, 5), 7.0))


def test_a_tensor_saved_for_backward_keeps_the_memory_busy():
    scratch = UpdateScratch()
    x = torch.randn(4, 5, requires_grad=True)
    weight = scratch.take((4, 5)).fill_(3.0)
    y = x * weight                                   # mul saves `weight` for its backward
    del weight
    assert scratch.in_use()
    scratch.take((4, 5)).fill_(100.0)
    y.sum().backward()
    assert torch.equal(x.grad, torch.full((4, 5), 3.0))
    del y
    assert not scratch.in_use()


def test_without_a_reference_count_every_take_is_fresh(monkeypatch):
    monkeypatch.delattr(torch._C, "_storage_Use_Count")
    assert storage_references(torch.empty(3)) == 0
    scratch = UpdateScratch()
    assert scratch.in_use()
    for _ in range(2):
        assert scratch.take((2, 3)).shape == (2, 3)
    assert scratch.buffer.numel() == 0               # nothing kept
