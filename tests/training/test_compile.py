"""trainer.compile=true on CPU (torch.compile, Inductor's C++ kernels built by
gcc): it trains as the eager model does, saves plain state_dict keys, resumes.

Time (`time pytest tests/training/test_compile.py`, one thread): with a cold
Inductor cache 45 s of CPU (129 s wall on the shared 2-core machine), most of
it gcc building the kernels of one dynamic-shape compile of forward and
backward of a 1-layer d_model=16 Transformer; with a warm cache
(/tmp/torchinductor_$USER) 16 s of CPU.
"""

import json

import pytest
import torch

from tests.helpers import one_thread, train  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = ("data=toy", "model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
        "model/positional=sinusoidal", "trainer.val_every=2", "trainer.val_max_sentences=5",
        "trainer.heatmap_sentences=0", "trainer.keep_last=1", "trainer.log_every=1",
        *(f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
          for key, value in (("d_model", 16), ("layers", 1), ("heads", 2), ("ff_size", 32), ("dropout", 0.0))))


def _losses(run_dir):
    return [json.loads(line)["loss"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_compiled_training_saves_resumes_and_matches_eager(tmp_path, cache_dir):
    compiled = train(tmp_path / "compiled", *TINY, "trainer.max_steps=2", "trainer.compile=true",
                     cache_dir=cache_dir)
    assert compiled.forward is not compiled.parallel            # the compiled wrapper ran the updates
    saved = torch.load(tmp_path / "compiled" / "checkpoints" / "step_2.pt", weights_only=True)
    assert not [k for k in saved["model"] if "_orig_mod" in k]
    assert saved["model"].keys() == compiled.model.state_dict().keys()

    resumed = train(tmp_path / "compiled", *TINY, "trainer.max_steps=4", "trainer.compile=true",
                    "trainer.resume=auto", cache_dir=cache_dir)
    assert resumed.step == 4

    eager = train(tmp_path / "eager", *TINY, "trainer.max_steps=4", cache_dir=cache_dir)
    # the same updates, up to the order of floating-point sums in fused kernels
    assert _losses(tmp_path / "compiled") == pytest.approx(_losses(tmp_path / "eager"), abs=1e-4)
    # A key bias adds one constant to each query's scores, which softmax ignores: its gradient is
    # rounding noise, which Adam scales into lr-sized steps, so those are left out.
    for name, value in eager.model.state_dict().items():
        if not name.endswith("w_k.bias"):
            assert torch.allclose(value, resumed.model.state_dict()[name], atol=1e-4), name


RNN = ("experiment=quickstart", "trainer.val_every=2", "trainer.val_max_sentences=5", "trainer.heatmap_sentences=0",
       "trainer.keep_last=1", "trainer.log_every=1", "trainer.max_steps=2", "trainer.precision=bf16")


def test_compiled_rnn_in_bf16_trains_as_the_eager_one(tmp_path, cache_dir):
    """A GRU encoder and decoder under trainer.compile=true and bf16 autocast:
    the encoder is compiled, the decoder's step loop stays eager (torch 2.13's
    Inductor failed on it), and the updates are the eager model's."""
    compiled = train(tmp_path / "compiled", *RNN, "trainer.compile=true", cache_dir=cache_dir)
    assert compiled.forward is not compiled.parallel
    train(tmp_path / "eager", *RNN, cache_dir=cache_dir)
    assert _losses(tmp_path / "compiled") == pytest.approx(_losses(tmp_path / "eager"), abs=2e-2)


def test_a_compile_failure_is_one_line(tmp_path, cache_dir, monkeypatch):
    from nmt.base.errors import NmtError

    def failing(*args, **kwargs):
        raise torch._dynamo.exc.TorchDynamoException("Exponent must be non-negative.\nmore detail")

    monkeypatch.setattr(torch, "compile", lambda module, **options: failing)
    with pytest.raises(NmtError) as caught:
        train(tmp_path / "run", *TINY, "trainer.max_steps=2", "trainer.compile=true", cache_dir=cache_dir)
    assert str(caught.value) == (f"trainer.compile=true: torch {torch.__version__} could not compile this model "
                                 "(TorchDynamoException: Exponent must be non-negative.); train without "
                                 "trainer.compile")
    assert not (tmp_path / "run" / "checkpoints" / "step_2.pt").exists()
