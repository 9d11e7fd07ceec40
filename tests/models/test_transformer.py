"""Transformer encoder and decoder: masks, caches, weights, every positional kind."""

from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from nmt.core.masks import padding_mask
from nmt.base.errors import NmtError
from nmt.core.transformer_decoder import TransformerDecoder
from nmt.core.transformer_encoder import TransformerEncoder
from nmt.core.outputs import Memory
from nmt.core.positional.alibi import AlibiPositions
from nmt.core.positional.learned import LearnedPositions
from nmt.core.positional.none import NoPositions
from nmt.core.positional.relative import RelativePositions
from nmt.core.positional.rotary import RotaryPositions
from nmt.core.positional.sinusoidal import SinusoidalPositions
from nmt.core.multihead import MultiHeadAttention

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
V, D, PAD = 13, 8, 0
KINDS = {
    "sinusoidal": SinusoidalPositions(),
    "learned": LearnedPositions(max_len=16),
    "relative": RelativePositions(max_relative=2),
    "relative_keys_only": RelativePositions(max_relative=2, values=False),
    "rotary": RotaryPositions(),
    "alibi": AlibiPositions(),
    "none": NoPositions(),
}
# Two sentences: the second padded. bos = 2, eos = 3.
SRC = torch.tensor([[4, 5, 6, 7, 3], [8, 9, 3, PAD, PAD]])
TGT = torch.tensor([[2, 5, 6, 7, 8, 9], [2, 10, 11, 3, PAD, PAD]])


def build(kind="sinusoidal", norm_first=True, memory_dim=D, **decoder_kwargs):
    torch.manual_seed(0)
    positional = KINDS[kind]
    enc = TransformerEncoder(V, d_model=memory_dim, layers=2, heads=2, ff_size=16, dropout=0.0,
                             norm_first=norm_first, positional=positional)
    dec = TransformerDecoder(V, memory_dim, d_model=D, layers=2, heads=2, ff_size=16,
                             dropout=0.0, norm_first=norm_first, positional=positional,
                             **decoder_kwargs)
    return enc.eval(), dec.eval()


def encode(enc, src=SRC):
    mask = padding_mask(src, PAD)                       # (B, 1, S)
    return Memory(enc(src, mask).memory, mask)


def run_steps(dec, memory, tgt):
    state = dec.init_state(memory, None)
    logits, weights = [], []
    for t in range(tgt.size(1)):
        out, state, w = dec.step(tgt[:, t], state, memory)
        logits.append(out)
        weights.append(w)
    return torch.stack(logits, 1), torch.stack(weights, 1), state


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("kind", KINDS)
def test_step_by_step_equals_forward(kind, norm_first):
    enc, dec = build(kind, norm_first)
    memory = encode(enc)
    full = dec(TGT, dec.init_state(memory, None), memory, need_weights=True)
    logits, weights, state = run_steps(dec, memory, TGT)
    assert torch.allclose(logits, full.logits, atol=1e-5)
    assert torch.allclose(weights, full.weights, atol=1e-5)
    assert state.position == TGT.size(1) and state.keys[0].shape == (2, 2, TGT.size(1), D // 2)


@pytest.mark.parametrize("kind", KINDS)
def test_no_position_sees_the_future(kind):
    enc, dec = build(kind)
    memory = encode(enc)
    changed = TGT.clone()
    changed[:, 3] = 12
    a = dec(TGT, None, memory).logits
    b = dec(changed, None, memory).logits
    assert torch.allclose(a[:, :3], b[:, :3], atol=1e-6)
    assert not torch.allclose(a[:, 3:], b[:, 3:], atol=1e-4)


@pytest.mark.parametrize("kind", KINDS)
def test_source_padding_changes_nothing(kind):
    enc, dec = build(kind)
    memory = encode(enc)
    other = SRC.clone()
    other[1, 3:] = torch.tensor([11, 12])               # garbage under the pad mask
    other_mem = Memory(enc(other, memory.mask).memory, memory.mask)
    longer = torch.cat([SRC, torch.full((2, 2), PAD)], 1)   # two more pad columns
    longer_mem = encode(enc, longer)
    real = memory.mask[:, 0, :, None]                   # (B, S, 1)
    for m in (other_mem, longer_mem):
        assert torch.allclose((m.states[:, :5] * real), memory.states * real, atol=1e-5)
        out = dec(TGT, None, m, need_weights=True)
        ref = dec(TGT, None, memory, need_weights=True)
        assert torch.allclose(out.logits, ref.logits, atol=1e-5)
        assert torch.allclose(out.weights[..., :5], ref.weights, atol=1e-6)


def test_encoder_last_is_the_last_real_state():
    enc, _ = build()
    out = enc(SRC, padding_mask(SRC, PAD))
    assert out.memory.shape == (2, 5, D) and enc.output_size == D
    assert torch.equal(out.last[0], out.memory[0, 4])
    assert torch.equal(out.last[1], out.memory[1, 2])


@pytest.mark.parametrize("kind", KINDS)
def test_sdpa_path_equals_explicit_weights_path(kind):
    enc, dec = build(kind)
    memory = encode(enc)
    fast = dec(TGT, None, memory, need_weights=False)
    slow = dec(TGT, None, memory, need_weights=True)
    assert fast.weights is None and fast.layers is None
    assert torch.allclose(fast.logits, slow.logits, atol=1e-5)
    # and one attention module alone, with a causal-and-padding mask
    position = KINDS[kind].attention_layer(D // 2)
    attn = MultiHeadAttention(D, 2, position=position).eval()
    x = torch.randn(2, 6, D)
    mask = (torch.tril(torch.ones(6, 6)).bool() & (TGT != PAD)[:, None, :])[:, None]
    out_fast, none = attn(x, x, mask)
    out_slow, weights = attn(x, x, mask, need_weights=True)
    assert torch.allclose(out_fast, out_slow, atol=1e-5)
    assert weights.shape == (2, 2, 6, 6)


def test_reorder_state_follows_the_beams():
    enc, dec = build("relative")
    memory = encode(enc)
    state = dec.init_state(memory, None)
    for t in range(2):
        _, state, _ = dec.step(TGT[:, t], state, memory)
    index = torch.tensor([1, 0, 1])
    state = dec.reorder_state(state, index)
    picked = memory.index_select(index)
    logits, _, _ = dec.step(TGT[index, 2], state, picked)
    expected = dec(TGT[index, :3], None, picked).logits[:, 2]
    assert torch.allclose(logits, expected, atol=1e-5)


def test_weights_sum_to_one_over_real_tokens():
    enc, dec = build(attention_layer=0, attention_head=1)
    memory = encode(enc)
    out = dec(TGT, None, memory, need_weights=True)
    assert out.layers.shape == (2, 2, 2, 6, 5)          # (B, L, H, T, S)
    assert torch.allclose(out.weights, out.layers[:, 0, 1])
    assert torch.allclose(out.weights.sum(-1), torch.ones(2, 6), atol=1e-6)
    assert torch.all(out.weights[1, :, 3:] == 0)         # source pads
    assert torch.allclose(out.layers.sum(-1), torch.ones(2, 2, 2, 6), atol=1e-6)
    _, _, w = dec.step(TGT[:, 0], dec.init_state(memory, None), memory)
    assert torch.allclose(w, out.weights[:, 0], atol=1e-6)


def test_default_weights_are_the_mean_of_the_last_layer():
    enc, dec = build()
    memory = encode(enc)
    out = dec(TGT, None, memory, need_weights=True)
    assert torch.allclose(out.weights, out.layers[:, -1].mean(1))


@pytest.mark.parametrize("kind", ["sinusoidal", "relative"])
def test_fully_masked_rows_give_no_nan(kind):
    enc, dec = build(kind)
    src = torch.tensor([[4, 5, 3], [PAD, PAD, PAD]])
    memory = encode(enc, src)
    tgt = torch.tensor([[2, 5, 6], [PAD, PAD, PAD]])
    out = dec(tgt, None, memory, need_weights=True)
    assert not torch.isnan(memory.states).any() and not torch.isnan(out.logits).any()
    assert torch.all(out.weights[1] == 0)
    assert torch.allclose(dec(tgt, None, memory).logits, out.logits, atol=1e-5)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("kind", KINDS)
def test_forward_and_backward(kind, norm_first):
    torch.manual_seed(1)
    positional = KINDS[kind]
    enc = TransformerEncoder(V, d_model=D, layers=2, heads=2, ff_size=16, dropout=0.1,
                             norm_first=norm_first, positional=positional)
    dec = TransformerDecoder(V, D, d_model=D, layers=2, heads=2, ff_size=16, dropout=0.1,
                             norm_first=norm_first, positional=positional)
    memory = encode(enc)
    out = dec(TGT[:, :-1], dec.init_state(memory, None), memory)
    loss = torch.nn.functional.cross_entropy(out.logits.reshape(-1, V), TGT[:, 1:].reshape(-1),
                                             ignore_index=PAD)
    loss.backward()
    grads = [p.grad for p in [*enc.parameters(), *dec.parameters()] if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert enc.embed.weight.grad.abs().sum() > 0


def test_memory_dim_may_differ_from_d_model():
    enc, dec = build(memory_dim=6)
    memory = encode(enc)
    logits, _, _ = run_steps(dec, memory, TGT)
    assert torch.allclose(logits, dec(TGT, None, memory).logits, atol=1e-5)


def test_tied_embeddings():
    _, dec = build()
    assert dec.out.weight is dec.embed.weight
    _, untied = build(tie_embeddings=False)
    assert untied.out.weight is not untied.embed.weight


def test_learned_positions_stop_the_decoder_past_max_len():
    enc, dec = build("learned")
    memory = encode(enc)
    with pytest.raises(NmtError, match="model.positional.max_len"):
        dec(torch.full((2, 17), 5), None, memory)


def test_bad_sizes_are_user_errors():
    with pytest.raises(NmtError, match="divisible"):
        TransformerEncoder(V, d_model=10, heads=4)
    with pytest.raises(NmtError, match="attention_layer"):
        TransformerDecoder(V, D, d_model=D, layers=2, heads=2, attention_layer=2)
    with pytest.raises(NmtError, match="attention_head"):
        TransformerDecoder(V, D, d_model=D, layers=2, heads=2, attention_head=2)


def test_yamls_build_with_what_the_builder_passes():
    positional = instantiate(OmegaConf.load(CONFIGS / "model" / "positional" / "relative.yaml"))
    enc = instantiate(OmegaConf.load(CONFIGS / "model" / "encoder" / "transformer.yaml"),
                      vocab_size=V, positional=positional, pad_id=PAD)
    dec = instantiate(OmegaConf.load(CONFIGS / "model" / "decoder" / "transformer.yaml"),
                      vocab_size=V, memory_dim=enc.output_size, positional=positional,
                      attention=None, pad_id=PAD)
    assert isinstance(enc, TransformerEncoder) and isinstance(dec, TransformerDecoder)
    assert enc.output_size == 256 and len(dec.layers) == 3


def test_a_checkpoint_naming_the_transformers_old_modules_still_loads(tmp_path):
    """Checkpoints written before the Transformer moved to nmt/models/transformer/
    name nmt.models.encoders.transformer and nmt.models.decoders.transformer."""
    from omegaconf import OmegaConf

    from nmt.models.build import build_model
    from nmt.store.checkpoints import load_checkpoint, save_checkpoint
    from tests.helpers import make_config

    cfg = make_config("model/encoder=transformer", "model/decoder=transformer", "model/bridge=zero",
                      "model/positional=sinusoidal", *[f"model.{part}.{key}={value}" for part in ("encoder", "decoder")
                                                      for key, value in (("d_model", 16), ("layers", 1),
                                                                         ("heads", 2), ("ff_size", 32))])
    model = build_model(cfg.model, 20, 20)
    old = OmegaConf.to_container(cfg.model, resolve=True)
    old["encoder"]["_target_"] = "nmt.models.encoders.transformer.TransformerEncoder"
    old["decoder"]["_target_"] = "nmt.models.decoders.transformer.TransformerDecoder"
    state = {"config": {"model": old}, "tokenizer": {"joint": b"proto"}, "model": model.state_dict()}
    loaded = load_checkpoint(save_checkpoint(state, tmp_path / "old.pt"))
    assert loaded["config"]["model"]["encoder"]["_target_"] == "nmt.core.transformer_encoder.TransformerEncoder"
    assert loaded["config"]["model"]["decoder"]["_target_"] == "nmt.core.transformer_decoder.TransformerDecoder"
    rebuilt = build_model(OmegaConf.create(loaded["config"]["model"]), 20, 20)
    rebuilt.load_state_dict(loaded["model"])      # every weight has its old name and shape
