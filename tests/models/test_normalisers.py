"""Sparse normalisers (sparsemax, 1.5-entmax) by hand, and in every attention:
every score and scope of the RNN attentions, and the Transformer's self- and
cross-attention, cached decoding included. Padding gets exactly 0."""

import math
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from nmt.core.masks import padding_mask
from nmt.base.errors import NmtError
from nmt.core.attention.base import SCOPES, Attention
from nmt.core.attention.luong_dot import DotAttention
from nmt.core.normalisers.entmax import entmax15
from nmt.core.normalisers.masked import NORMALISERS, masked_normalise
from nmt.core.normalisers.sparsemax import sparsemax
from nmt.models.build import build_model
from nmt.core.transformer_decoder import TransformerDecoder
from nmt.core.transformer_encoder import TransformerEncoder
from nmt.core.outputs import Memory
from nmt.core.positional.alibi import AlibiPositions
from nmt.core.positional.sinusoidal import SinusoidalPositions
from nmt.core.multihead import MultiHeadAttention

ROOT = Path(__file__).resolve().parents[2]
ATTENTION = ROOT / "configs" / "model" / "attention"
SPARSE = ["sparsemax", "entmax15"]


def close(actual, expected, atol=1e-5):
    return torch.allclose(actual, torch.tensor(expected, dtype=actual.dtype), atol=atol)


# -- the formulas by hand ------------------------------------------------------
def test_sparsemax_by_hand():
    z = torch.tensor([1.0, 0.5, -1.0])
    # Martins & Astudillo, Alg. 1. Sorted: z_(1..3) = 1, 0.5, -1; running sums 1, 1.5, 0.5.
    #   k=1: 1 + 1*1    = 2  > 1    yes
    #   k=2: 1 + 2*0.5  = 2  > 1.5  yes
    #   k=3: 1 + 3*(-1) = -2 > 0.5  no      -> k(z) = 2
    # tau = (1.5 - 1) / 2 = 0.25; p = [1 - 0.25, 0.5 - 0.25, 0] = [0.75, 0.25, 0]
    p = sparsemax(z)
    assert close(p, [0.75, 0.25, 0.0]) and p[2] == 0
    # a tie of two large scores: tau = (3 + 3 - 1) / 2 = 2.5 -> [0.5, 0.5, 0, 0]
    assert close(sparsemax(torch.tensor([3.0, 3.0, 0.0, -2.0])), [0.5, 0.5, 0.0, 0.0])


def test_entmax15_by_hand():
    z = torch.tensor([1.0, 0.5, -1.0])
    # Peters et al. 2019, alpha = 1.5: p_i = [z_i/2 - tau]_+^2, sum p_i = 1.
    # z/2 = [0.5, 0.25, -0.5]. Try support {1, 2}:
    #   (0.5 - tau)^2 + (0.25 - tau)^2 = 1
    #   2 tau^2 - 1.5 tau + 0.3125 - 1 = 0  ->  tau = (1.5 - sqrt(2.25 + 5.5)) / 4
    #   sqrt(7.75) = 2.783882,  tau = -0.320971   (< 0.25: both in; > -0.5: third out)
    #   p_1 = (0.5 + 0.320971)^2 = 0.820971^2 = 0.673993
    #   p_2 = (0.25 + 0.320971)^2 = 0.570971^2 = 0.326008     sum = 1.000001 (rounding)
    tau = (1.5 - math.sqrt(7.75)) / 4
    assert abs(tau - (-0.320971)) < 1e-6
    p = entmax15(z)
    assert close(p, [0.673993, 0.326008, 0.0]) and p[2] == 0
    # and softmax would give every position weight: e^-1 / (e + e^0.5 + e^-1) > 0
    assert bool((NORMALISERS["softmax"](z) > 0).all())


def test_entmax15_of_two_equal_scores_is_uniform():
    # z = [c, c]: (c/2 - tau)^2 * 2 = 1 -> c/2 - tau = 1/sqrt(2), p = [1/2, 1/2]
    assert close(entmax15(torch.tensor([0.3, 0.3])), [0.5, 0.5])


@pytest.mark.parametrize("normaliser", list(NORMALISERS))
def test_padding_gets_exactly_zero_and_rows_sum_to_one(normaliser):
    scores = torch.tensor([[1.0, 0.5, 50.0, -3.0], [0.2, 0.1, 0.0, 99.0]])   # (2, 4)
    mask = torch.tensor([[True, True, False, True], [True, False, False, False]])
    w = masked_normalise(scores, mask, normaliser)
    assert bool((w[~mask] == 0).all())                      # exactly 0, despite score 50 / 99
    assert close(w.sum(-1), [1.0, 1.0], atol=1e-6)
    assert w[1, 0] == 1.0                                   # one real position: all weight
    if normaliser == "sparsemax":
        # real scores [1, 0.5, -3]: as the hand case, tau = 0.25 -> [0.75, 0.25, -, 0]
        assert close(w[0], [0.75, 0.25, 0.0, 0.0])


def test_low_precision_scores_are_normalised_in_float32():
    z = torch.tensor([1.0, 0.5, -1.0], dtype=torch.bfloat16)
    for fn in (sparsemax, entmax15):
        p = fn(z)
        assert p.dtype == torch.bfloat16 and p[2] == 0 and abs(float(p.float().sum()) - 1) < 1e-2


def test_unknown_normaliser_is_one_clear_line():
    with pytest.raises(NmtError, match="normaliser='sigmoid' unknown; choose one of") as error:
        DotAttention(2, 2, normaliser="sigmoid")
    assert "\n" not in str(error.value)
    with pytest.raises(NmtError, match="entmax15"):
        MultiHeadAttention(4, 2, normaliser="softmax2")


# -- every RNN attention x scope x normaliser ------------------------------------
NAMES = ["bahdanau", "luong_dot", "luong_general", "luong_concat", "luong_location",
         "scaled_dot", "cosine", "multihead"]
D = 4


def build_attention(name, scope, normaliser):
    cfg = OmegaConf.load(ATTENTION / f"{name}.yaml")
    cfg.scope, cfg.window, cfg.normaliser = scope, 1, normaliser
    if "hidden_dim" in cfg:
        cfg.hidden_dim = 3
    if name == "multihead":
        cfg.heads = 2
    return instantiate(cfg, query_dim=D, key_dim=D)


def test_every_attention_yaml_takes_the_normaliser():
    for path in sorted(ATTENTION.glob("*.yaml")):
        cfg = OmegaConf.load(path)
        assert cfg.normaliser == "softmax", path.name
        cfg.normaliser = "entmax15"
        module = instantiate(cfg, query_dim=D, key_dim=D)
        assert isinstance(module, Attention) and module.normaliser == "entmax15", path.name


@pytest.mark.parametrize("normaliser", SPARSE)
@pytest.mark.parametrize("scope", list(SCOPES))
@pytest.mark.parametrize("name", NAMES)
def test_every_score_and_scope(name, scope, normaliser):
    torch.manual_seed(3)
    m = build_attention(name, scope, normaliser).train()
    q = torch.randn(2, 3, D, requires_grad=True)
    k = torch.randn(2, 6, D, requires_grad=True)
    v = torch.randn(2, 6, D, requires_grad=True)
    mask = (torch.arange(6)[None, :] < torch.tensor([6, 3])[:, None])[:, None, :]   # (B, 1, S)
    torch.manual_seed(0)
    out = m(q, m.prepare(k), v, mask, torch.tensor([[0, 2, 4], [0, 1, 2]]))
    w = out.weights                                                  # (B, T, S)
    assert bool((w[1, :, 3:] == 0).all())                            # padding: exactly 0
    assert bool((w >= 0).all()) and torch.isfinite(out.context).all()
    if scope != "local_p":                                           # local-p: times a Gaussian
        assert torch.allclose(w.sum(-1), torch.ones(2, 3), atol=1e-5)
    else:
        assert bool((w.sum(-1) <= 1 + 1e-5).all())
    if scope == "hard":                         # log of a sampled weight: never log 0
        assert torch.isfinite(out.log_prob).all()
    loss = out.context.sum() + w.pow(2).sum()
    if out.log_prob is not None:
        loss = loss + out.log_prob.sum()
    loss.backward()
    for pname, p in m.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), pname
    assert torch.isfinite(q.grad).all()
    assert k.grad is None if name == "luong_location" else torch.isfinite(k.grad).all()


def test_sparse_global_attention_by_hand():
    # dot scores of query [1] with 1-d keys [1, 0.5, -1, (pad 40)] are the keys themselves:
    # sparsemax -> [0.75, 0.25, 0, 0] (test_sparsemax_by_hand), context = 0.75*1 + 0.25*0.5
    m = DotAttention(1, 1, normaliser="sparsemax")
    k = torch.tensor([1.0, 0.5, -1.0, 40.0])[None, :, None]           # (1, 4, 1)
    mask = torch.tensor([True, True, True, False])[None, None, :]
    out = m(torch.ones(1, 1, 1), m.prepare(k), k, mask)
    assert close(out.weights, [[[0.75, 0.25, 0.0, 0.0]]])
    assert close(out.context, [[[0.875]]])


def test_sparse_local_m_window_by_hand():
    # local-m at t = 1, D = 1: window {0, 1, 2} of keys [1, 0.5, -1, 3]; the 3 is outside.
    # sparsemax over [1, 0.5, -1] -> [0.75, 0.25, 0] (by hand above), 0 outside the window.
    m = DotAttention(1, 1, scope="local_m", window=1, normaliser="sparsemax")
    k = torch.tensor([1.0, 0.5, -1.0, 3.0])[None, :, None]
    out = m(torch.ones(1, 1, 1), m.prepare(k), k, torch.ones(1, 1, 4, dtype=torch.bool),
            torch.tensor([[1]]))
    assert close(out.weights, [[[0.75, 0.25, 0.0, 0.0]]])


@pytest.mark.parametrize("normaliser", SPARSE)
def test_hard_attention_samples_only_where_the_weight_is_not_zero(normaliser):
    # scores [1, 0.5, -1, -2]: both normalisers give [p, 1 - p, 0, 0] (third and fourth below tau)
    m = DotAttention(1, 1, scope="hard", normaliser=normaliser).train()
    k = torch.tensor([1.0, 0.5, -1.0, -2.0])[None, :, None]            # (1, 4, 1)
    query = torch.ones(1, 200, 1)                                     # 200 draws at once
    torch.manual_seed(0)
    out = m(query, m.prepare(k), k, torch.ones(1, 1, 4, dtype=torch.bool))
    alpha = out.weights[0, 0]
    assert alpha[2] == 0 and alpha[3] == 0
    chosen = out.context[0, :, 0]                                     # the value at s_t
    assert set(chosen.tolist()) == {1.0, 0.5}                         # both seen, never -1 or -2
    expected = torch.where(chosen == 1.0, alpha[0].log(), alpha[1].log())
    assert torch.allclose(out.log_prob[0], expected)


@pytest.mark.parametrize("scope", ["global", "local_m", "local_p"])
@pytest.mark.parametrize("normaliser", SPARSE)
def test_rnn_decoder_step_by_step_equals_teacher_forcing(normaliser, scope):
    from nmt.core.attention.luong_general import GeneralAttention
    from nmt.core.rnn_decoder import RNNDecoder
    torch.manual_seed(0)
    attention = GeneralAttention(6, 4, scope=scope, window=1, normaliser=normaliser)
    dec = RNNDecoder(12, memory_dim=4, attention=attention, cell="lstm", style="luong",
                     embed_dim=5, hidden_size=6, dropout=0.0).eval()
    with torch.no_grad():
        attention.w_a.weight.mul_(5.0)                # sharper scores: some weights cut to 0
    mask = torch.tensor([[[True, True, True, False]], [[True, True, True, True]]])
    memory = Memory(torch.randn(2, 4, 4), mask)
    tgt = torch.tensor([[2, 5, 6, 7, 8], [2, 8, 9, 3, 4]])
    init = torch.randn(2, 6)
    full = dec(tgt, dec.init_state(memory, init), memory)
    state = dec.init_state(memory, init)
    for t in range(tgt.size(1)):
        logits, state, weights = dec.step(tgt[:, t], state, memory)
        assert torch.allclose(logits, full.logits[:, t], atol=1e-5)
        assert torch.allclose(weights, full.weights[:, t], atol=1e-6)
    assert bool((full.weights[0, :, 3] == 0).all())                 # the padded position
    assert bool((full.weights[:, :, :3] == 0).any())                # and some real ones


# -- Transformer ----------------------------------------------------------------
V, DM, PAD = 13, 8, 0
SRC = torch.tensor([[4, 5, 6, 7, 3], [8, 9, 3, PAD, PAD]])
TGT = torch.tensor([[2, 5, 6, 7, 8, 9], [2, 10, 11, 3, PAD, PAD]])


def build_transformer(normaliser, positional):
    torch.manual_seed(0)
    enc = TransformerEncoder(V, d_model=DM, layers=2, heads=2, ff_size=16, dropout=0.0,
                             positional=positional, normaliser=normaliser)
    dec = TransformerDecoder(V, DM, d_model=DM, layers=2, heads=2, ff_size=16, dropout=0.0,
                             positional=positional, normaliser=normaliser)
    # larger logits than at initialisation, so the sparse normalisers do cut positions off
    with torch.no_grad():
        for module in (*enc.modules(), *dec.modules()):
            if isinstance(module, MultiHeadAttention):
                module.w_q.weight.mul_(4.0)
    return enc.eval(), dec.eval()


def test_transformer_attention_by_hand():
    # one head, identity projections, Dh = 2: q = [2, 0]; keys [1, 0], [0.5, 0], [-1, 0], pad
    # logits q.k / sqrt(2) = [2, 1, -2] / 1.4142 = [1.41421, 0.70711, -1.41421]
    # sparsemax: k=2 (1 + 2*0.70711 = 2.41 > 2.12), tau = (2.12132 - 1) / 2 = 0.56066
    #   -> [0.85355, 0.14645, 0, 0]
    attn = MultiHeadAttention(2, 1, normaliser="sparsemax")
    q = torch.tensor([2.0, 0.0]).view(1, 1, 1, 2)                     # (B, H, T, Dh)
    k = torch.tensor([[1.0, 0.0], [0.5, 0.0], [-1.0, 0.0], [9.0, 0.0]]).view(1, 1, 4, 2)
    mask = torch.tensor([True, True, True, False]).view(1, 1, 1, 4)
    _, w = attn.attend(q, k, k, mask, need_weights=True)
    assert close(w, [[[[0.853553, 0.146447, 0.0, 0.0]]]])
    # no weights asked for: the same explicit path (no SDPA for a sparse normaliser)
    out_a, _ = attn.attend(q, k, k, mask)
    out_b, _ = attn.attend(q, k, k, mask, need_weights=True)
    assert torch.equal(out_a, out_b)


@pytest.mark.parametrize("normaliser", SPARSE)
@pytest.mark.parametrize("positional", [SinusoidalPositions(), AlibiPositions()],
                         ids=["sinusoidal", "alibi"])
def test_transformer_cached_decoding_equals_teacher_forcing(normaliser, positional):
    enc, dec = build_transformer(normaliser, positional)
    mask = padding_mask(SRC, PAD)
    enc_self = []
    memory = Memory(enc(SRC, mask, self_weights=enc_self).memory, mask)
    dec_self = []
    full = dec(TGT, None, memory, need_weights=True, self_weights=dec_self)
    state = dec.init_state(memory, None)
    logits, weights = [], []
    for t in range(TGT.size(1)):
        out, state, w = dec.step(TGT[:, t], state, memory)
        logits.append(out)
        weights.append(w)
    assert torch.allclose(torch.stack(logits, 1), full.logits, atol=1e-5)
    assert torch.allclose(torch.stack(weights, 1), full.weights, atol=1e-5)
    # cross-attention: source pads exactly 0, rows sum to 1, and some real token cut to 0
    layers = full.layers                                              # (B, L, H, T, S)
    assert bool((layers[1, ..., 3:] == 0).all())
    assert torch.allclose(layers.sum(-1), torch.ones(2, 2, 2, 6), atol=1e-5)
    assert bool((layers[0] == 0).any())
    # encoder and decoder self-attention: pads and the future exactly 0, rows sum to 1
    enc_w = torch.stack(enc_self, 1)                                  # (B, L, H, S, S)
    assert bool((enc_w[1, ..., 3:] == 0).all())
    assert torch.allclose(enc_w[0].sum(-1), torch.ones(2, 2, 5), atol=1e-5)
    dec_w = torch.stack(dec_self, 1)                                  # (B, L, H, T, T)
    future = ~torch.tril(torch.ones(6, 6, dtype=torch.bool))
    assert bool((dec_w[..., future] == 0).all())
    assert torch.allclose(dec_w[0].sum(-1), torch.ones(2, 2, 6), atol=1e-5)


@pytest.mark.parametrize("normaliser", SPARSE)
def test_transformer_fully_masked_rows_and_gradients(normaliser):
    enc, dec = build_transformer(normaliser, SinusoidalPositions())
    enc.train(), dec.train()
    src = torch.tensor([[4, 5, 3], [PAD, PAD, PAD]])
    mask = padding_mask(src, PAD)
    memory = Memory(enc(src, mask).memory, mask)
    out = dec(torch.tensor([[2, 5, 6], [2, 7, PAD]]), None, memory, need_weights=True)
    assert torch.isfinite(out.logits).all() and bool((out.weights[1] == 0).all())
    out.logits.sum().backward()
    for p in [*enc.parameters(), *dec.parameters()]:
        assert p.grad is None or torch.isfinite(p.grad).all()


def compose_model(*overrides):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def test_one_override_reaches_every_attention():
    # python -m nmt.train experiment=transformer_small data=toy model.attention.normaliser=entmax15
    cfg = compose_model("experiment=transformer_small", "model.attention.normaliser=entmax15")
    model = build_model(cfg.model, 20, 20)
    found = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    assert len(found) == 3 + 3 * 2                   # encoder self, decoder self and cross
    assert {m.normaliser for m in found} == {"entmax15"}
    # and the RNN attention of the quickstart
    cfg = compose_model("experiment=quickstart", "model.attention.normaliser=sparsemax")
    model = build_model(cfg.model, 20, 20)
    assert model.decoder.attention.normaliser == "sparsemax"
    # default: softmax everywhere
    cfg = compose_model("experiment=transformer_small")
    model = build_model(cfg.model, 20, 20)
    assert {m.normaliser for m in model.modules() if isinstance(m, MultiHeadAttention)} == {"softmax"}


# -- heatmaps -------------------------------------------------------------------
def _cell_colours(fig):
    """(t, s) -> RGB of the middle of that cell of a drawn heatmap."""
    import numpy as np

    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())                      # (height, width, 4)
    ax = fig.axes[0]

    def colour(t, s):
        x, y = ax.transData.transform((s, t))                          # cell centre, display
        return tuple(int(v) for v in pixels[pixels.shape[0] - int(round(y)), int(round(x)), :3])

    return colour


def test_heatmaps_draw_exact_zeros_white_and_small_weights_not(tmp_path):
    import numpy as np
    from nmt.viz.heatmaps import attention_figure, save_figure

    weights = np.array([[0.0, 1e-4, 0.9999],
                        [0.75, 0.25, 0.0]])                           # (T, S): sparsemax rows
    fig = attention_figure(weights, ["a", "b", "c"], ["x", "y"], exact_zeros=True)
    colour = _cell_colours(fig)
    white = (255, 255, 255)
    assert colour(0, 0) == white and colour(1, 2) == white             # exactly 0
    assert colour(0, 1) != white and colour(1, 1) != white             # 1e-4 and 0.25: colours
    assert fig.axes[1].get_xlabel().startswith("attention weight (white: exactly 0)")
    save_figure(fig, tmp_path / "zeros.png")


def test_a_softmax_zero_is_not_drawn_as_a_hole():
    """softmax is never exactly 0: a 0 there is float32 underflow (exp(-104)),
    drawn as the scale's lowest colour, as 1e-30 would be, not white."""
    import numpy as np
    from nmt.viz.heatmaps import attention_figure

    weights = np.array([[0.0, 1e-30, 1.0]], dtype=np.float32)         # (T, S)
    fig = attention_figure(weights, ["a", "b", "c"], ["x"])            # exact_zeros=False: softmax
    colour = _cell_colours(fig)
    darkest = (68, 1, 84)                                              # viridis at 0: #440154
    assert colour(0, 0) == darkest and colour(0, 1) == darkest
    assert fig.axes[1].get_xlabel().startswith("attention weight") and "white: exactly 0" not in fig.axes[1].get_xlabel()


@pytest.mark.parametrize("overrides, decoder, encoder", [
    (["experiment=quickstart"], False, False),
    (["experiment=quickstart", "model.attention.normaliser=sparsemax"], True, False),
    (["experiment=transformer_small"], False, False),
    (["experiment=transformer_small", "model.decoder.normaliser=entmax15"], True, False),
    (["experiment=transformer_small", "model.encoder.normaliser=sparsemax"], False, True),
], ids=["rnn_softmax", "rnn_sparsemax", "transformer_softmax", "decoder_entmax", "encoder_sparsemax"])
def test_only_a_sparse_normaliser_has_exact_zeros(overrides, decoder, encoder):
    from types import SimpleNamespace

    from nmt.viz.attention_data import exact_zeros, sparse

    model = build_model(compose_model(*overrides).model, 20, 20)
    assert sparse(model.decoder) is decoder and sparse(model.encoder) is encoder
    one = SimpleNamespace(model=model)
    assert exact_zeros(SimpleNamespace(members=[one])) is decoder
