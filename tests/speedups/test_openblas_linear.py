"""trainer.matmul=openblas (nmt.speedups.openblas_linear): nn.Linear's three products
in a training update through numpy's OpenBLAS, on numbers computed by hand, against
F.linear, and in whole runs (learning, exact resume, torch's products when evaluating)."""

import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from nmt.base.errors import NmtError
from nmt.speedups.openblas_linear import (
    OpenBLASLinear,
    openblas_controller,
    resolve_matmul,
    start_openblas,
    torch_products,
    use_openblas,
)
from nmt.speedups.scratch import UpdateScratch
from tests.helpers import one_thread, run_cli, train  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("one_thread")

CPU = torch.device("cpu")
AMD = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2\n"
INTEL = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx2\n"


def linear(weight, bias=None) -> OpenBLASLinear:
    layer = nn.Linear(len(weight[0]), len(weight), bias=bias is not None)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight))
        if bias is not None:
            layer.bias.copy_(torch.tensor(bias))
    use_openblas(layer)
    return layer


def test_the_three_products_by_hand():
    # x = [1, 2], W = [[1, 0], [0, 1], [1, 1]], b = [0.5, 0, -1]
    # y = x W^T + b = [1 + 0.5, 2 + 0, 3 - 1] = [1.5, 2, 2]
    layer = linear([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [0.5, 0.0, -1.0])
    x = torch.tensor([[1.0, 2.0]], requires_grad=True)
    y = layer(x)
    assert y.tolist() == [[1.5, 2.0, 2.0]]
    # dY = [1, 2, 3]: dX = dY W = [1 + 3, 2 + 3] = [4, 5]; dW = dY^T x = [[1, 2], [2, 4], [3, 6]]; db = dY
    y.backward(torch.tensor([[1.0, 2.0, 3.0]]))
    assert x.grad.tolist() == [[4.0, 5.0]]
    assert layer.weight.grad.tolist() == [[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]
    assert layer.bias.grad.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("bias", [True, False])
def test_gradients_pass_gradcheck_on_every_input_shape(bias):
    torch.manual_seed(0)
    layer = nn.Linear(5, 3, bias=bias).double()
    use_openblas(layer)
    x = torch.randn(2, 4, 5, dtype=torch.float64, requires_grad=True)          # (B, T, in)
    inputs = (x, layer.weight, *([layer.bias] if bias else []))
    assert torch.autograd.gradcheck(lambda x, *parameters: layer(x), inputs)   # perturbs the layer's own


def twins(fan_in: int, fan_out: int, seed: int) -> tuple[nn.Linear, OpenBLASLinear]:
    """An nn.Linear and an OpenBLASLinear with the same weights."""
    torch.manual_seed(seed)
    reference, layer = nn.Linear(fan_in, fan_out), nn.Linear(fan_in, fan_out)
    layer.load_state_dict(reference.state_dict())
    use_openblas(layer)
    return reference, layer


def test_float32_matches_f_linear_on_strided_inputs_and_gradients():
    reference, layer = twins(8, 6, seed=1)
    base = torch.randn(8, 3, 4)
    x = base.permute(2, 1, 0).requires_grad_()                                  # (4, 3, 8), not contiguous
    x_ref = x.detach().clone().requires_grad_()
    layer(x).sum().backward()                                                   # dY expanded: stride 0
    reference(x_ref).sum().backward()
    assert torch.allclose(x.grad, x_ref.grad, atol=1e-5)
    assert torch.allclose(layer.weight.grad, reference.weight.grad, atol=1e-5)
    assert torch.allclose(layer.bias.grad, reference.bias.grad, atol=1e-5)


def test_an_output_written_into_kept_memory_is_the_same_and_reused():
    reference, layer = twins(16, 40, seed=3)
    layer.scratch = UpdateScratch()
    addresses = set()
    for rows in (7, 5):
        x = torch.randn(rows, 16, requires_grad=True)
        out = layer(x)
        addresses.add(out.data_ptr())
        assert torch.allclose(out, reference(x), atol=1e-6)
        out.square().sum().backward()
        expected = torch.autograd.grad(reference(x).square().sum(), (x, reference.weight))
        assert torch.allclose(x.grad, expected[0], atol=1e-5)
        assert torch.allclose(layer.weight.grad, expected[1], atol=1e-5)
        layer.weight.grad = None
        del out
    assert addresses == {layer.scratch.buffer.data_ptr()}                       # one memory, both batches


def test_frozen_weights_and_inputs_without_gradients():
    layer = linear([[2.0, 0.0], [0.0, 3.0]])
    layer.weight.requires_grad_(False)
    x = torch.tensor([[1.0, 1.0]], requires_grad=True)
    layer(x).sum().backward()
    assert x.grad.tolist() == [[2.0, 3.0]] and layer.weight.grad is None
    layer.weight.requires_grad_(True)
    layer(torch.tensor([[1.0, 2.0]])).sum().backward()                          # x without a gradient
    assert layer.weight.grad.tolist() == [[1.0, 2.0], [1.0, 2.0]]


def test_evaluation_and_autocast_use_torch_products_byte_for_byte():
    reference, layer = twins(16, 16, seed=2)
    x = torch.randn(5, 16)
    layer.eval()
    assert torch.equal(layer(x), F.linear(x, reference.weight, reference.bias))
    layer.train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert layer(x).dtype == torch.bfloat16                                 # autocast's product, not numpy's


def test_swapping_keeps_parameters_and_state_dict_and_torch_products_undoes_it():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2, bias=False)))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert use_openblas(model) == 2
    assert [type(m) for m in model.modules() if isinstance(m, nn.Linear)] == [OpenBLASLinear] * 2
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    with torch_products(model):
        assert not any(type(m) is OpenBLASLinear for m in model.modules())
    assert sum(type(m) is OpenBLASLinear for m in model.modules()) == 2   # swapped back on leaving


def test_auto_takes_openblas_only_where_it_was_measured_to_pay(monkeypatch):
    assert resolve_matmul("torch", CPU, "fp32", False, AMD) == "torch"
    if openblas_controller() is None or not torch.backends.mkl.is_available():
        pytest.skip("numpy here is not on OpenBLAS, or torch not on MKL")
    assert resolve_matmul("auto", CPU, "fp32", False, AMD) == "openblas"       # one thread (the fixture)
    assert resolve_matmul("auto", CPU, "fp32", False, INTEL) == "torch"
    assert resolve_matmul("auto", CPU, "fp32", False, "") == "torch"           # vendor unknown
    assert resolve_matmul("auto", CPU, "bf16", False, AMD) == "torch"
    assert resolve_matmul("auto", CPU, "fp32", True, AMD) == "torch"
    assert resolve_matmul("auto", torch.device("cuda"), "fp32", False, AMD) == "torch"
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    assert resolve_matmul("auto", CPU, "fp32", False, AMD) == "torch"
    assert resolve_matmul("openblas", CPU, "fp32", False, INTEL) == "openblas"  # asked for: taken


@pytest.mark.parametrize("device, precision, compiled, why", [
    ("cuda", "fp32", False, "multiplies on the CPU"),
    ("cpu", "bf16", False, "multiplies fp32"),
    ("cpu", "fp32", True, "drop trainer.compile"),
])
def test_openblas_that_cannot_apply_is_one_error_line(device, precision, compiled, why):
    with pytest.raises(NmtError, match=why) as error:
        resolve_matmul("openblas", torch.device(device), precision, compiled)
    assert "\n" not in str(error.value) and "trainer.matmul=torch" in str(error.value)


def test_numpy_on_another_blas_is_one_line(monkeypatch):
    from nmt.speedups import openblas_linear

    monkeypatch.setattr(openblas_linear, "numpy_blas", lambda: "mkl")      # numpy built on MKL, say
    assert openblas_controller() is None
    assert resolve_matmul("auto", CPU, "fp32", False, AMD) == "torch"
    with pytest.raises(NmtError, match="needs numpy built on OpenBLAS"):
        resolve_matmul("openblas", CPU, "fp32", False)


def test_openblas_threads_follow_torch():
    if openblas_controller() is None:
        pytest.skip("numpy here is not on OpenBLAS")
    start_openblas(nn.Linear(2, 2))
    assert [lib["num_threads"] for lib in openblas_controller().info()] == [torch.get_num_threads()] * len(
        openblas_controller().info())


TINY = ("data=toy", "model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
        "model/positional=sinusoidal", "trainer.val_every=10", "trainer.val_max_sentences=5",
        "trainer.heatmap_sentences=0", "trainer.keep_last=2", "trainer.log_every=1",
        *(f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
          for key, value in (("d_model", 32), ("layers", 1), ("heads", 2), ("ff_size", 64))))


def _losses(run_dir):
    """The validation losses of metrics.jsonl, one a trainer.val_every."""
    return [json.loads(line)["loss"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()
            if "loss" in json.loads(line)]


@pytest.mark.skipif(openblas_controller() is None, reason="numpy here is not on OpenBLAS")
def test_a_run_on_openblas_learns_as_torch_does_and_resumes_exactly(tmp_path, cache_dir):
    blas = train(tmp_path / "blas", *TINY, "trainer.max_steps=40", "trainer.matmul=openblas", cache_dir=cache_dir)
    assert sum(type(m) is OpenBLASLinear for m in blas.model.modules()) > 10   # every projection
    vocab = blas.tokenizer.tgt_vocab_size
    kept = [m for m in blas.model.modules() if getattr(m, "scratch", None) is not None]
    assert kept == [blas.model.decoder.out] and kept[0].out_features == vocab   # the output layer alone
    assert kept[0].scratch.buffer.numel() >= vocab                              # its logits' memory, kept
    theirs = train(tmp_path / "torch", *TINY, "trainer.max_steps=40", cache_dir=cache_dir)
    assert not any(type(m) is OpenBLASLinear for m in theirs.model.modules())   # trainer.matmul=torch: the default
    ours, reference = _losses(tmp_path / "blas"), _losses(tmp_path / "torch")
    assert len(ours) == 4 and ours[-1] < ours[0] - 1.0                          # it learns
    assert ours == pytest.approx(reference, rel=2e-3)                           # torch's run, up to rounding

    split = tmp_path / "split"
    train(split, *TINY, "trainer.max_steps=20", "trainer.matmul=openblas", cache_dir=cache_dir)
    train(split, *TINY, "trainer.max_steps=40", "trainer.matmul=openblas", "trainer.resume=auto",
          cache_dir=cache_dir)
    assert _losses(split) == ours                                               # exact resume
    best = torch.load(split / "checkpoints" / "last.pt", weights_only=True)["model"]
    assert all(torch.equal(v, blas.model.state_dict()[k]) for k, v in best.items())


def test_the_cli_refuses_openblas_it_cannot_use_in_one_line(tmp_path):
    result = run_cli("nmt.train", "data=toy", "trainer.matmul=openblas", "trainer.precision=bf16",
                     f"hydra.run.dir={tmp_path / 'run'}", f"cache_dir={tmp_path / 'cache'}")
    lines = result.stderr.decode().strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1, result.stderr.decode()
    assert "trainer.matmul=openblas multiplies fp32" in lines[0] and "Traceback" not in lines[0]
    assert not (tmp_path / "run" / "checkpoints").exists()                      # refused before any work
