"""nmt.speedups.decode_cache: the decoder step with its cache written in place gives the core's
step's logits, weights and searches bit for bit (torch.equal), past a doubling of its buffers."""

import pytest
import torch

from nmt.core.outputs import Memory
from nmt.core.positional.rotary import RotaryPositions
from nmt.core.transformer_decoder import TransformerDecoder
from nmt.speedups.decode_cache import FIRST_CAPACITY, KeptCacheDecoder, KeptCacheLayer, KeptCacheState, use_kept_cache
from nmt.translator import Translator
from tests.decoding.test_search_models import SOURCES, transformer_checkpoint  # noqa: F401 - a fixture
from tests.helpers import one_thread  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("one_thread")


def decoders(positional=None, explicit=False):
    """A core TransformerDecoder and a kept-cache copy of it, the same parameters, eval mode."""
    torch.manual_seed(3)
    core = TransformerDecoder(50, 16, d_model=16, layers=2, heads=2, ff_size=32, dropout=0.0,
                              positional=positional).eval()
    kept = TransformerDecoder(50, 16, d_model=16, layers=2, heads=2, ff_size=32, dropout=0.0,
                              positional=positional).eval()
    kept.load_state_dict(core.state_dict())
    assert use_kept_cache(kept) == 1 and use_kept_cache(kept) == 0       # swapped once
    core.explicit_attention = kept.explicit_attention = explicit
    return core, kept


@pytest.mark.parametrize("positional", [None, RotaryPositions()], ids=["sinusoidal", "rotary"])
@pytest.mark.parametrize("explicit", [False, True], ids=["sdpa", "explicit"])
def test_steps_reordered_and_shrunk_give_the_cores_floats(positional, explicit):
    core, kept = decoders(positional, explicit)
    B, S, steps = 6, 5, FIRST_CAPACITY + 4                 # past the first buffer: one doubling
    memory = Memory(torch.randn(B, S, 16), torch.ones(B, 1, S, dtype=torch.bool))
    memory.mask[0, 0, 3:] = False                          # one padded source
    core_state, kept_state = core.init_state(memory), kept.init_state(memory)
    assert isinstance(kept_state, KeptCacheState)
    generator = torch.Generator().manual_seed(0)
    y = torch.randint(4, 50, (B,), generator=generator)
    with torch.no_grad():
        for t in range(steps):
            a = core.step(y, core_state, memory)
            b = kept.step(y, kept_state, memory)
            assert torch.equal(a[0], b[0]) and torch.equal(a[2], b[2]), t   # logits (n, V), weights (n, S)
            n = y.numel()
            index = torch.randperm(n, generator=generator)        # a beam's reorder, rows repeated too
            index[0] = index[-1]
            if t == 9:
                index = index[: n - 2]                              # two rows leave the batch
                memory = memory.index_select(index)
            core_state, kept_state = core.reorder_state(a[1], index), kept.reorder_state(b[1], index)
            y = a[0][index].argmax(-1)
    assert kept_state.keys[0].size(2) == 2 * FIRST_CAPACITY and kept_state.position == steps


@pytest.mark.parametrize("beam_size, batch_size", [(1, 64), (3, 64), (3, 2), (1, 1)])
def test_translations_are_the_cores_bit_for_bit(transformer_checkpoint, beam_size, batch_size):  # noqa: F811
    kept = Translator.from_checkpoint(transformer_checkpoint, device="cpu")
    assert type(kept.model.decoder) is KeptCacheDecoder                     # what from_checkpoint gives
    core = Translator.from_checkpoint(transformer_checkpoint, device="cpu", kernels="plain")   # the core's step
    assert type(core.model.decoder) is TransformerDecoder
    nbest = min(2, beam_size)
    for a, b in zip(core.translate(SOURCES, beam_size=beam_size, nbest=nbest, batch_size=batch_size),
                    kept.translate(SOURCES, beam_size=beam_size, nbest=nbest, batch_size=batch_size)):
        assert a.tokens == b.tokens and a.score == b.score and a.nbest == b.nbest
        assert torch.equal(torch.as_tensor(a.attention), torch.as_tensor(b.attention))


def test_the_teacher_forced_pass_reads_a_kept_state(transformer_checkpoint):  # noqa: F811
    """forward() on init_state's KeptCacheState (as heatmaps and explain call it) is the core's."""
    translator = Translator.from_checkpoint(transformer_checkpoint, device="cpu")
    src, _, _ = translator._encode(SOURCES[:2])
    tgt_in = torch.tensor([[2, 5, 6, 7], [2, 8, 9, 0]])
    model = translator.model
    with torch.no_grad():
        enc = model.encode(src)
        got = model.decoder(tgt_in, model.decoder.init_state(enc.memory, enc.init), enc.memory, need_weights=True)
        want = model.decoder(tgt_in, TransformerDecoder.init_state(model.decoder, enc.memory), enc.memory,
                             need_weights=True)
    assert torch.equal(got.logits, want.logits) and torch.equal(got.weights, want.weights)


def test_kernels_plain_decodes_with_the_cores_step_and_the_same_outputs(transformer_checkpoint):  # noqa: F811
    """kernels="plain" (--kernels plain) leaves the core's decoder step in
    place; the default keeps the cache in place; both translate alike."""
    plain = Translator.from_checkpoint(transformer_checkpoint, device="cpu", kernels="plain")
    kept = Translator.from_checkpoint(transformer_checkpoint, device="cpu")
    assert type(plain.model.decoder) is TransformerDecoder
    assert type(kept.model.decoder) is KeptCacheDecoder
    for a, b in zip(plain.translate(SOURCES, beam_size=3, nbest=2), kept.translate(SOURCES, beam_size=3, nbest=2)):
        assert a.text == b.text and a.score == b.score and a.nbest == b.nbest     # attention: numpy, compared below
        assert torch.equal(torch.as_tensor(a.attention), torch.as_tensor(b.attention))


def test_only_the_cache_methods_are_replaced():
    """The step is the core's: the speedup overrides grow_cache, init_state and pick_cache alone."""
    own = lambda cls: {name for name, value in vars(cls).items() if callable(value)}   # noqa: E731
    assert own(KeptCacheLayer) == {"grow_cache"}
    assert own(KeptCacheDecoder) == {"init_state"}
    assert own(KeptCacheState) == {"pick_cache"}
    core, kept = decoders()
    assert [type(layer) for layer in kept.layers] == [KeptCacheLayer, KeptCacheLayer]


def test_grow_cache_by_hand():
    """t=1 cached position and one new one, Dh=1: the core appends, (1, 1, 2, 1) = [[1], [2]];
    the kept layer writes position 1 of its buffer in place and attends to the same two."""
    core, kept = decoders()
    cache = torch.tensor([1.0, 9.0, 9.0]).view(1, 1, 3, 1)        # position 0 written; 1, 2 free room
    new = torch.tensor([2.0]).view(1, 1, 1, 1)
    k, v, carried = core.layers[0].grow_cache((cache[:, :, :1], cache[:, :, :1]), new, new, 1)
    assert k.flatten().tolist() == [1.0, 2.0] and carried[0] is k
    k, v, carried = kept.layers[0].grow_cache((cache, cache.clone()), new, new, 1)
    assert k.flatten().tolist() == [1.0, 2.0] and carried[0] is cache             # the same buffer
    assert cache.flatten().tolist() == [1.0, 2.0, 9.0]
