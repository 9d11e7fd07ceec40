"""nmt.speedups.dropout: the mask from 16-bit slices of 64-bit words, by hand;
its drop rate and scale; identity in eval mode."""

import torch

from nmt.speedups.dropout import Dropout, dropout_noise, noise_from_words


def test_noise_from_one_word_by_hand():
    # 0x00007FFF8000C000 as int16 lanes, low first (little-endian): 0xC000 = -16384,
    # 0x8000 = -32768, 0x7FFF = 32767, 0x0000 = 0.
    # p = 0.25: cut = 16384, kept when u >= 16384 - 32768 = -16384, scale 65536 / 49152 = 4/3
    words = torch.tensor([0x00007FFF8000C000], dtype=torch.int64)
    noise = noise_from_words(words, (2, 2), 0.25)
    assert torch.equal(noise, torch.tensor([[4 / 3, 0.0], [4 / 3, 4 / 3]]))


def test_noise_is_the_bool_mask_cast_and_scaled():
    """The float comparison gives, bit for bit, what the bool mask cast to float and
    scaled gives (seeded runs train as before)."""
    torch.manual_seed(5)
    words = torch.empty(4_000, dtype=torch.int64).random_(-(1 << 63), (1 << 63) - 1)
    for p in (0.0, 0.1, 0.3, 0.5):
        cut = round(p * 65536)
        keep = words.view(torch.int16).view(100, 160) >= cut - 32768
        expected = keep.to(torch.float32).mul_(65536 / (65536 - cut))
        noise = noise_from_words(words, (100, 160), p)
        assert noise.dtype == torch.float32
        assert torch.equal(noise.view(torch.int32), expected.view(torch.int32))


def test_drop_rate_scale_and_gradient():
    torch.manual_seed(0)
    noise = dropout_noise((1000, 1000), 0.1)
    dropped = float((noise == 0).float().mean())
    # p rounds to 6554 / 65536 = 0.100006; the std of a rate over 1e6 draws is 0.0003
    assert abs(dropped - 6554 / 65536) < 0.0015
    assert torch.equal(noise[noise != 0].unique(), torch.tensor([65536 / (65536 - 6554)]))
    x = torch.ones(3, 4, requires_grad=True)
    layer = Dropout(0.5).train()
    y = layer(x)
    y.sum().backward()
    assert torch.equal(x.grad, y.detach())          # dy/dx = m / q, and y = 1 * m / q
    assert set(y.detach().unique().tolist()) <= {0.0, 2.0}


def test_identity_in_eval_and_at_zero():
    x = torch.randn(5, 7)
    assert Dropout(0.3).eval()(x) is x
    assert Dropout(0.0).train()(x) is x


def test_seeded_runs_draw_the_same_mask():
    torch.manual_seed(3)
    a = dropout_noise((64, 33), 0.2)
    torch.manual_seed(3)
    assert torch.equal(a, dropout_noise((64, 33), 0.2))


def test_no_graph_break_under_torch_compile():
    """Tensor.random_ would split a compiled graph at every dropout; compiled,
    the module hands the mask to Inductor (F.dropout). Dynamo only, no codegen."""
    explanation = torch._dynamo.explain(Dropout(0.1).train())(torch.randn(4, 8))
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1
