"""trainer.device and Translator(device=...): every name is a torch.device or one NmtError line."""

import pytest
import torch

from nmt.base.errors import NmtError
from nmt.base.device import resolve_device

NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")


@pytest.mark.parametrize("name", ["cuda:x", "cuda:", "cuda:-1", "cuda:1.5", "cuda: 0"])
def test_a_cuda_device_that_is_not_a_number_is_one_line(name):
    # not torch's RuntimeError 'Invalid device string' (a traceback through nmt.train)
    with pytest.raises(NmtError) as caught:
        resolve_device(name)
    assert str(caught.value) == (f"trainer.device={name!r}: the GPU must be a number from 0, e.g. "
                                 "trainer.device=cuda:0; or use trainer.device=cuda, cpu or auto")


@NO_GPU
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:3"])
def test_a_cuda_device_without_a_gpu_is_one_line(name):
    # cuda:N with no GPU at all is refused here, not at the first tensor moved there
    with pytest.raises(NmtError) as caught:
        resolve_device(name)
    assert str(caught.value) == (f"trainer.device={name} but no CUDA GPU is visible; use trainer.device=cpu "
                                 "or trainer.device=auto")


def test_a_gpu_past_the_last_is_one_line(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1") == torch.device("cuda:1")
    with pytest.raises(NmtError) as caught:
        resolve_device("cuda:2")
    assert str(caught.value) == "trainer.device=cuda:2 but this machine shows 2 GPU(s), cuda:0 to cuda:1"


@pytest.mark.parametrize("name, expected", [("cpu", "cpu"), ("auto", "cuda" if torch.cuda.is_available() else "cpu")])
def test_plain_names(name, expected):
    assert resolve_device(name).type == expected
