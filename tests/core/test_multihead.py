"""nmt/core/multihead.py is one kernel: its functions by hand, and the RNN
decoder's multi-head attention giving what the Transformer's attention gives,
on its SDPA fast path and on its explicit path alike."""

import pytest
import torch

from nmt.core.multihead import MultiHeadAttention, MultiHeadDotAttention, head_scores, merge_heads, split_heads


def test_split_and_merge_heads_by_hand():
    x = torch.arange(8.0).view(1, 2, 4)                        # (B, L, H * Dh), H = 2, Dh = 2
    heads = split_heads(x, 2)                                  # (B, H, L, Dh)
    assert torch.equal(heads[0, 0], torch.tensor([[0.0, 1.0], [4.0, 5.0]]))   # head 0: features 0, 1
    assert torch.equal(heads[0, 1], torch.tensor([[2.0, 3.0], [6.0, 7.0]]))   # head 1: features 2, 3
    assert torch.equal(merge_heads(heads), x)


def test_head_scores_by_hand():
    q = torch.tensor([[[[1.0, 2.0, 0.0, 2.0]]]])             # (1, 1, 1, 4): sqrt(Dh) = 2
    k = torch.tensor([[[[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 2.0]]]])
    # q . k = [5, 4]; + bias [1, 0] = [6, 4]; / 2 = [3, 2]
    scores = head_scores(q, k, torch.tensor([1.0, 0.0]))
    assert torch.equal(scores, torch.tensor([[[[3.0, 2.0]]]]))


def twins(D=8, H=2, seed=0):
    """An RNN multi-head attention and a Transformer one with the same weights (no biases)."""
    torch.manual_seed(seed)
    rnn = MultiHeadDotAttention(D, D, heads=H).eval()
    transformer = MultiHeadAttention(D, H).eval()
    with torch.no_grad():
        for name in ("w_q", "w_k", "w_v", "w_o"):
            getattr(transformer, name).weight.copy_(getattr(rnn, name).weight)
            getattr(transformer, name).bias.zero_()
    return rnn, transformer


@pytest.mark.parametrize("need_weights", [False, True], ids=["sdpa", "explicit"])
def test_the_rnn_decoders_multihead_is_the_transformers(need_weights):
    rnn, transformer = twins()
    query, memory = torch.randn(3, 4, 8), torch.randn(3, 6, 8)   # (B, T, D), (B, S, D)
    mask = torch.ones(3, 1, 6, dtype=torch.bool)
    mask[1, 0, 4:] = False                                      # sentence 1 has 4 real tokens
    out = rnn(query, rnn.prepare(memory), memory, mask)
    q = transformer.queries(query)
    k, v = transformer.keys_values(memory)
    context, weights = transformer.attend(q, k, v, mask[:, None], need_weights=need_weights)
    assert torch.allclose(out.context, context, atol=1e-6)
    if need_weights:
        assert torch.allclose(rnn.head_weights(query, rnn.prepare(memory), mask), weights, atol=1e-6)
        assert torch.equal(weights[1, :, :, 4:], torch.zeros(2, 4, 2))
