"""Coverage attention: additive scores that see how much each source token
has already been attended to.

Tu, Lu, Liu, Liu & Li 2016, Modeling Coverage for Neural Machine
Translation, ACL, arXiv:1601.04811 (the idea: keep a coverage vector of
the source and feed it to the attention model); the form used here is
See, Liu & Manning 2017, Get To The Point, ACL, arXiv:1704.04368,
Sec. 2.3 (eqs. 10-12):

    c_t   = sum over t' < t of a_t'                  (c_1 = 0), (B, S)
    e_t,i = v . tanh(W s_t + U h_i + w_c c_t,i)
    a_t   = softmax over real i of e_t,i             (or model.attention.normaliser)
    covloss_t = sum_i min(a_t,i, c_t,i)
"""

import torch
from torch import Tensor, nn

from nmt.core.attention.bahdanau import AdditiveAttention


class CoverageAttention(AdditiveAttention):
    """Bahdanau attention with a coverage vector in the score.

    W: query_dim -> hidden_dim, U: key_dim -> hidden_dim, w_c: a vector of
    hidden_dim (one scalar coverage value per source position, as in See et
    al.), v: hidden_dim; no biases (as AdditiveAttention). Tu et al.'s
    fertility-scaled "linguistic" coverage and their GRU-updated coverage
    are not implemented: c_t is the plain running sum.

    The coverage vector belongs to the decoder: the RNN decoder keeps it in
    its state (so beam search reorders it with the beams) and passes it
    as `forward(..., coverage=c_t)`; it also returns c_t of every step
    (DecoderOutput.coverage) for the coverage loss (nmt.core.loss.coverage_loss,
    weighted by model.attention.coverage_loss_weight) and
    the explorer. Only this additive score takes coverage; a Transformer
    decoder refuses model/attention=coverage (nmt.config_schema.combinations).
    """

    uses_coverage = True

    def __init__(self, query_dim: int, key_dim: int, scope: str = "global", window: int = 5,
                 hidden_dim: int = 256, coverage_loss_weight: float = 0.1, **options):
        super().__init__(query_dim, key_dim, scope, window, hidden_dim=hidden_dim, **options)
        self.w_c = nn.Linear(1, hidden_dim, bias=False)                # weight (A, 1)
        # read by the trainer from the config; kept here so the module shows it
        self.coverage_loss_weight = float(coverage_loss_weight)

    def forward(self, query: Tensor, prepared, values: Tensor, mask: Tensor, positions=None,
                coverage: Tensor | None = None):
        """As Attention.forward, plus coverage (B, T, S): c_t of every query
        (None: zeros, the first step)."""
        if coverage is None:
            coverage = query.new_zeros(query.size(0), query.size(1), values.size(1))
        return super().forward(query, (prepared, coverage), values, mask, positions)

    def head_weights(self, query: Tensor, prepared, mask: Tensor, positions=None,
                     coverage: Tensor | None = None) -> Tensor:
        if coverage is None:
            coverage = query.new_zeros(query.size(0), query.size(1), mask.size(-1))
        return super().head_weights(query, (prepared, coverage), mask, positions)

    def score(self, query: Tensor, prepared) -> Tensor:
        keys, coverage = prepared                                      # (B, S, A), (B, T, S)
        hidden = (self.w_a(query)[:, :, None, :]                       # (B, T, 1, A)
                  + keys[:, None, :, :]                                # (B, 1, S, A)
                  + coverage[..., None].to(keys.dtype) * self.w_c.weight[:, 0])  # (B, T, S, A)
        return torch.tanh(hidden) @ self.v_a.weight[0]                 # (B, T, S)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", coverage_loss_weight={self.coverage_loss_weight}"
