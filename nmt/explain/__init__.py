"""Explanations beyond raw attention: which source tokens an output token
depends on, read five ways, for nmt's models and Hugging Face ones.

    from nmt.explain import explain
    result = explain(translator, "Ein Hund läuft.", out.tokens, "integrated-gradients")
    result.scores      # (L, H, T, S): rows = the output's subwords then </s>, columns = source subwords

Gradient methods (Captum) attribute each target token's log-probability,
teacher-forced on the output being explained, to the source embeddings,
and reduce each token's attribution to its L2 norm (nmt.explain.scores):

    saliency              || d f_t / d e_j ||                     (saliency.py)
    input-x-gradient      || e_j * d f_t / d e_j ||               (input_x_gradient.py)
    integrated-gradients  || (e_j - 0) * mean of the gradient on the path from 0 ||
                                                                  (integrated_gradients.py)

Attention methods read the attention of the same teacher-forced pass:

    rollout               every layer's attention and residual, rolled out
                          (Abnar & Zuidema 2020; Transformer decoders)   (rollout.py)
    value-norm            || sum_h alpha_h(t, j) f_h(x_j) ||, per layer
                          (Kobayashi et al. 2020)                        (value_norm.py)

Every method's scores are >= 0; `shown` divides each row by its sum, so a
row reads as a distribution over the source, as attention does.
"""

from typing import NamedTuple

import numpy as np
import torch

from nmt.base.errors import NmtError

# name -> (title, what a cell is); the one list --explain, the explorer and the notebook offer
METHODS = {
    "saliency": ("saliency (Simonyan et al. 2014)", "|| d log p(y_t) / d e_j ||"),
    "input-x-gradient": ("input x gradient (Shrikumar et al. 2016)", "|| e_j * d log p(y_t) / d e_j ||"),
    "integrated-gradients": ("integrated gradients (Sundararajan et al. 2017)",
                             "|| IG_j ||, zero baseline, 32-point Gauss-Legendre path"),
    "rollout": ("attention rollout (Abnar & Zuidema 2020)", "source share after every layer and residual"),
    "value-norm": ("value-norm attention (Kobayashi et al. 2020)", "|| sum_h alpha_h(t, j) f_h(x_j) ||"),
}
GRADIENT_METHODS = ("saliency", "input-x-gradient", "integrated-gradients")


def check_method(name, option: str = "--explain") -> str:
    """`name` if it is one of METHODS, else NmtError listing them; `option` names
    where it came from ("--explain", or "explain=" for a keyword)."""
    if not isinstance(name, str) or name not in METHODS:
        given = f"{option}{name!r:.40}" if option.endswith("=") else f"{option} {name}"
        raise NmtError(f"{given}: unknown method; choose one of {', '.join(METHODS)}")
    return name


class Explanation(NamedTuple):
    method: str
    scores: np.ndarray       # (L, H, T, S) >= 0; gradient methods, an RNN's value-norm: L = H = 1
    shown: np.ndarray        # the same, each row divided by its sum
    title: str
    legend: str
    note: str = ""           # what a reader should know (integrated gradients' completeness gap)


def gradient_scores(adapter, pair, method: str):
    """(scores (T, S), note) of one gradient method."""
    from nmt.explain.objective import log_prob_objective

    objective = log_prob_objective(adapter.logits, adapter.embedding(), pair.src, pair.tgt_in, pair.targets)
    with torch.enable_grad():
        if method == "saliency":
            from nmt.explain.saliency import saliency
            return saliency(objective), ""
        if method == "input-x-gradient":
            from nmt.explain.input_x_gradient import input_x_gradient
            return input_x_gradient(objective), ""
        from nmt.explain.integrated_gradients import integrated_gradients
        scores, gap = integrated_gradients(objective)
        return scores, f"completeness gap (quadrature error) at most {float(gap.abs().max()):.2g} nats a row"


def attention_scores(adapter, pair, method: str) -> torch.Tensor:
    """(L, H, T, S) of rollout or value-norm."""
    attentions = adapter.attentions(pair)
    if method == "rollout":
        if not adapter.transformer_decoder:
            raise NmtError("rollout follows a Transformer decoder's layers and residuals; this model's decoder "
                           "is an RNN with one attention (choose value-norm or a gradient method)")
        from nmt.explain.rollout import rollout

        encoder_self = attentions.encoder_self
        if encoder_self is None:              # an RNN encoder: each state read as its own token (R = I)
            encoder_self = torch.zeros(0, 1, attentions.cross.shape[-1], attentions.cross.shape[-1])
        return rollout(encoder_self, attentions.decoder_self, attentions.cross)[None, None]
    from nmt.explain.value_norm import rnn_value_norm, value_norm, value_vectors

    projections = adapter.projections()
    if projections is None:
        return rnn_value_norm(attentions.cross[0, 0], attentions.memory)[None, None]
    return torch.stack([value_norm(attentions.cross[layer], value_vectors(attentions.memory, *p))
                        for layer, p in enumerate(projections)])[:, None]


def explain_pair(adapter, pair, method: str) -> Explanation:
    """The Explanation of a Pair (nmt.explain.models) by `method`."""
    from nmt.explain.scores import normalised_rows

    check_method(method)
    if method in GRADIENT_METHODS:
        scores, note = gradient_scores(adapter, pair, method)
        scores = scores[None, None]
    else:
        scores, note = attention_scores(adapter, pair, method), ""
    scores = scores.detach().float().cpu()                          # (L, H, T, S)
    title, legend = METHODS[method]
    return Explanation(method, scores.numpy(), normalised_rows(scores).numpy(), title, legend, note)


def explain(translator, source: str, tokens, method: str) -> Explanation:
    """Explain `tokens` (an output of `source`, without </s>) by `method`."""
    from nmt.explain.models import model_of

    check_method(method)
    adapter = model_of(translator)
    return explain_pair(adapter, adapter.pair(source, tokens), method)


def alternatives(translator, source: str, tokens, k: int) -> list[dict]:
    """nmt.explain.top_k of `tokens`: per output row, the k most probable
    subwords (ids, probabilities) and the chosen one's probability and rank;
    an ensemble's probabilities are its models' mean."""
    from nmt.explain.models import model_of
    from nmt.explain.top_k import mean_probabilities, top_k

    members = getattr(translator, "members", [translator])
    adapters = [model_of(m) for m in members] if len(members) > 1 else [model_of(translator)]
    pairs = [a.pair(source, tokens) for a in adapters]
    with torch.no_grad():
        probs = mean_probabilities([a.logits(p.src, p.tgt_in)[0] for a, p in zip(adapters, pairs)])   # (T, V)
    return top_k(probs, pairs[0].targets, k)
