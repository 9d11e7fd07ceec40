"""The length and coverage penalties that rank a beam's finished hypotheses.

Wu et al. 2016, Google's Neural Machine Translation System, arXiv:1609.08144,
Sec. 7 (Decoder):

    s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y)
    lp(Y) = (5 + |Y|)^alpha / (5 + 1)^alpha = ((5 + |Y|) / 6) ** alpha
    cp(X; Y) = beta * sum over source i of log(min(sum over t of a_t,i, 1.0))

A sum of log-probabilities only falls as a hypothesis grows, so without lp the
search prefers short outputs; alpha = 0 gives lp = 1 (no normalisation),
alpha = 1 divides by about the length. cp is 0 when every source token got
a total attention of 1 or more and negative for each one left uncovered;
beta = 0 turns it off. |Y| counts the output tokens with </s>.

Departure: a source token with coverage exactly 0 (possible under sparsemax
or entmax) counts as COVERAGE_FLOOR = 1e-9, not log 0 = -inf.

The file imports nothing: its formulas are tensor arithmetic, so
length_penalty also takes a numpy array (the CTranslate2 route ranks with it
and never loads torch).
"""

COVERAGE_FLOOR = 1e-9   # min(coverage, 1) of a source token never attended: log stays finite


def length_penalty(lengths, alpha: float):
    """lengths (N,) output tokens with </s>, a tensor or numpy array -> lp(Y) (N,).

    A long tensor gives float32 (torch's default type), a numpy int array float64."""
    return ((5.0 + lengths) / 6.0) ** alpha


def coverage_penalty(coverage, mask, beta: float):
    """coverage (N, S) the summed attention sum_t a_t,i of each hypothesis,
    mask (N, S) bool, True on real source tokens -> cp(X; Y) (N,), float32, <= 0."""
    if beta == 0:
        return coverage.new_zeros(coverage.size(0))
    capped = coverage.float().clamp(min=COVERAGE_FLOOR, max=1.0).log()     # (N, S), log min(c_i, 1)
    return beta * capped.masked_fill(~mask, 0.0).sum(-1)                   # (N,), padding adds 0
