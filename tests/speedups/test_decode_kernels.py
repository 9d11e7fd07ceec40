"""kernels="fast" (nmt.speedups.decode_kernels): oneDNN's products and a decoder step's attention
written out, against torch's kernels (the default, which must stay bit for bit as it was)."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from nmt.speedups.decode_kernels import OneDNNLinear, onednn_available, use_explicit_attention, use_onednn
from nmt.base.errors import NmtError
from nmt.translator import Translator
from tests.decoding.test_search_models import SOURCES, transformer_checkpoint  # noqa: F401 - a fixture
from tests.helpers import one_thread, run_cli  # noqa: F401 - one_thread: a fixture

pytestmark = [pytest.mark.usefixtures("one_thread"),
              pytest.mark.skipif(not onednn_available(), reason="this torch build has no oneDNN")]


def linear(inp=256, out=1000, bias=True):
    torch.manual_seed(0)
    layer = nn.Linear(inp, out, bias=bias).eval()
    use_onednn(layer)
    return layer


@pytest.mark.parametrize("shape", [(320, 256), (5, 1, 256), (1, 256), (3, 7, 256)])
@pytest.mark.parametrize("bias", [True, False])
def test_the_product_is_nn_linears_to_the_last_bits(shape, bias):
    layer = linear(bias=bias)
    x = torch.randn(*shape)
    with torch.no_grad():
        got, want = layer(x), F.linear(x, layer.weight, layer.bias)
    assert got.shape == want.shape == (*shape[:-1], 1000)
    # the same sums in another order: float32 rounding of 256 products, |y| up to about 10
    assert (got - want).abs().max() < 1e-4
    assert not torch.equal(got, torch.zeros_like(got))


def test_training_and_gradients_keep_torchs_products():
    layer = linear()
    x = torch.randn(4, 256)
    layer.train()
    assert torch.equal(layer(x), F.linear(x, layer.weight, layer.bias))
    layer.eval()
    out = layer(x)                     # grad enabled and the weight a parameter: F.linear, differentiable
    assert out.requires_grad and torch.equal(out, F.linear(x, layer.weight, layer.bias))


def test_a_changed_weight_is_reordered_again():
    layer = linear()
    x = torch.randn(2, 256)
    with torch.no_grad():
        before = layer(x)
        layer.weight.mul_(2.0)         # in place: the parameter's version moves
        after = layer(x)
    assert (after - 2 * (before - layer.bias) - layer.bias).abs().max() < 1e-4


def test_use_onednn_swaps_every_linear_and_keeps_ties():
    model = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 8), nn.Linear(8, 10, bias=False))
    model[2].weight = model[0].weight
    state = {k: v.clone() for k, v in model.state_dict().items()}
    assert use_onednn(model) == 2
    assert [type(m) for m in model] == [nn.Embedding, OneDNNLinear, OneDNNLinear]
    assert model[2].weight is model[0].weight
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    assert use_onednn(model) == 0       # already swapped


def test_the_default_leaves_torchs_linears(transformer_checkpoint):  # noqa: F811
    translator = Translator.from_checkpoint(transformer_checkpoint, device="cpu")
    assert translator.kernels == "torch"
    assert not any(isinstance(m, OneDNNLinear) for m in translator.model.modules())
    assert not translator.model.decoder.explicit_attention


@pytest.mark.parametrize("beam_size", [1, 3])
def test_fast_kernels_translate_as_torchs_do(transformer_checkpoint, beam_size):  # noqa: F811
    plain = Translator.from_checkpoint(transformer_checkpoint, device="cpu")
    fast = Translator.from_checkpoint(transformer_checkpoint, device="cpu", kernels="fast")
    assert sum(isinstance(m, OneDNNLinear) for m in fast.model.modules()) > 0
    assert fast.model.decoder.explicit_attention
    nbest = min(2, beam_size)
    for a, b in zip(plain.translate(SOURCES, beam_size=beam_size, nbest=nbest),
                    fast.translate(SOURCES, beam_size=beam_size, nbest=nbest)):
        assert a.tokens == b.tokens and a.text == b.text
        assert b.score == pytest.approx(a.score, abs=1e-4)
        assert abs(a.attention - b.attention).max() < 1e-4
        assert [t for t, _ in a.nbest] == [t for t, _ in b.nbest]


@pytest.mark.parametrize("beam_size", [1, 3])
def test_explicit_step_attention_gives_sdpas_results(transformer_checkpoint, beam_size):  # noqa: F811
    """The step's attention written out against SDPA: the same search, to the last bits."""
    plain = Translator.from_checkpoint(transformer_checkpoint, device="cpu")
    explicit = Translator.from_checkpoint(transformer_checkpoint, device="cpu")
    assert use_explicit_attention(explicit.model) == 1
    for a, b in zip(plain.translate(SOURCES, beam_size=beam_size), explicit.translate(SOURCES, beam_size=beam_size)):
        assert a.tokens == b.tokens
        assert b.score == pytest.approx(a.score, abs=1e-5)
        assert abs(a.attention - b.attention).max() < 1e-5


def test_unknown_kernels_are_one_error(transformer_checkpoint):  # noqa: F811
    with pytest.raises(NmtError, match="kernels='mkl' must be one of 'plain', 'torch', 'fast'"):
        Translator.from_checkpoint(transformer_checkpoint, device="cpu", kernels="mkl")


def test_the_cli_option(transformer_checkpoint, tmp_path):  # noqa: F811
    source = tmp_path / "in.txt"
    source.write_text("\n".join(SOURCES) + "\n")
    done = run_cli("nmt.translate", "--checkpoint", str(transformer_checkpoint), "--input", str(source),
                   "--kernels", "fast", "--device", "cpu", "--beam-size", "3", timeout=900)
    assert done.returncode == 0, done.stderr
    fast = Translator.from_checkpoint(transformer_checkpoint, device="cpu", kernels="fast")
    assert done.stdout.decode().splitlines() == [t.text for t in fast.translate(SOURCES, beam_size=3)]


@pytest.mark.parametrize("beam_size", [1, 3])
def test_translate_under_inference_mode_gives_no_grads_floats(transformer_checkpoint, beam_size):  # noqa: F811
    """translate() runs under torch.inference_mode; the search under no_grad, called directly on the
    same one-sentence batch, gives the same n-best, scores and attention bit for bit."""
    from nmt.core.beam_search import beam_search
    from nmt.core.greedy_search import greedy_search
    from nmt.translator import BOS, EOS, PAD

    translator = Translator.from_checkpoint(transformer_checkpoint, device="cpu")
    for sentence in SOURCES:
        (got,) = translator.translate([sentence], beam_size=beam_size, nbest=beam_size)
        src, _, _ = translator._encode([sentence])
        with torch.no_grad():
            if beam_size == 1:
                hyps = [greedy_search(translator.model, src, BOS, EOS, translator.max_len_ratio,
                                      translator.max_len_extra, translator.max_tgt_len, never=(PAD, BOS))[0]]
            else:
                (hyps,) = beam_search(translator.model, src, BOS, EOS, beam_size, beam_size, 1.0,
                                      translator.max_len_ratio, translator.max_len_extra, translator.max_tgt_len,
                                      never=(PAD, BOS))
        assert got.tokens == hyps[0].tokens and got.score == hyps[0].score
        assert [s for _, s in got.nbest] == [h.score for h in hyps]
        assert got.attention.tobytes() == hyps[0].attention.numpy().tobytes()
