"""How the study decides that two configurations differ, over their seeds.

Welch 1947, The Generalization of "Student's" Problem when Several Different
Population Variances are Involved, Biometrika 34: the t-test without equal
variances, t = (mean_a - mean_b) / sqrt(s_a²/n_a + s_b²/n_b) at the
Welch–Satterthwaite degrees of freedom. scipy.stats.ttest_ind(equal_var=False)
computes the exact two-sided p and the 95% confidence interval of the gap.

Holm 1979, A Simple Sequentially Rejective Multiple Test Procedure, Scand. J.
Statistics 6: the family's p-values sorted, p_(k) compared with
alpha / (m - k + 1), stopping at the first that fails; it holds the chance of
any false finding in the family at alpha. statsmodels'
multipletests(method="holm") computes it. A family is one table's or one
section's comparisons, all counted, findings or not.

Two configurations whose seeds gave one value each, without spread (toy
BLEU 100 ± 0), are compared by equality only: that is a description, not a
test, and is never corrected or called significant.

Equivalence and power (the pre-registered confirmation): the 90% Welch
interval of the gap, read against ±margin, is Schuirmann's two one-sided
tests at 5% (Schuirmann 1987, J. Pharmacokinetics and Biopharmaceutics 15);
power is the two-sample t-test's at the rows' pooled spread (statsmodels'
TTestIndPower).
"""

import math
import statistics
import warnings
from dataclasses import dataclass

ALPHA = 0.05


@dataclass(frozen=True)
class Comparison:
    """Row a against row b on one measure."""
    gap: float                     # mean of a minus mean of b
    p: float | None                # Welch's exact two-sided p; None when there is no test
    low: float | None              # 95% confidence interval of the gap
    high: float | None
    df: float | None
    kind: str                      # "welch", "no spread" (both spreads 0), "too few seeds"

    @property
    def testable(self) -> bool:
        return self.p is not None


def welch(a: list[float], b: list[float]) -> Comparison:
    """Welch's test of a against b (two-sided), or the reason there is none."""
    from scipy import stats

    gap = statistics.fmean(a) - statistics.fmean(b) if a and b else math.nan
    if len(a) < 2 or len(b) < 2:
        return Comparison(gap, None, None, None, None, "too few seeds")
    if statistics.variance(a) == 0 and statistics.variance(b) == 0:
        return Comparison(gap, None, None, None, None, "no spread")
    with warnings.catch_warnings():
        # one side's seeds all gave one value (toy BLEU 100, 100): exact, though scipy warns of
        # cancellation; the other side's spread makes the test
        warnings.filterwarnings("ignore", message="Precision loss occurred", category=RuntimeWarning)
        result = stats.ttest_ind(a, b, equal_var=False)
    interval = result.confidence_interval(0.95)
    return Comparison(gap, float(result.pvalue), float(interval.low), float(interval.high),
                      float(result.df), "welch")


def holm(p_values: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's decisions (True: a difference) for one family of p-values."""
    if not p_values:
        return []
    from statsmodels.stats.multitest import multipletests

    reject, *_ = multipletests(p_values, alpha=alpha, method="holm")
    return [bool(r) for r in reject]


def decide(comparisons: list[Comparison], alpha: float = ALPHA) -> list[str]:
    """One family's comparisons -> each one's reading in plain words:
    "differs" (survives Holm), "no finding" (Welch's p above what Holm
    allows), "equal, no spread" / "unequal, no spread" (nothing to test), or
    "too few seeds"."""
    tested = [k for k, c in enumerate(comparisons) if c.testable]
    survived = dict(zip(tested, holm([comparisons[k].p for k in tested], alpha)))
    readings = []
    for k, c in enumerate(comparisons):
        if c.kind == "no spread":
            readings.append("equal, no spread" if c.gap == 0 else "unequal, no spread")
        elif c.kind == "too few seeds":
            readings.append("too few seeds")
        else:
            readings.append("differs" if survived[k] else "no finding")
    return readings


def describe(c: Comparison, reading: str, digits: int = 2) -> str:
    """A table cell: the gap, its 95% interval, the exact p and the corrected reading."""
    if not c.testable:
        return f"{c.gap:+.{digits}f}: {reading}"
    return (f"{c.gap:+.{digits}f} [{c.low:+.{digits}f}, {c.high:+.{digits}f}], p = {c.p:.3g}: {reading}")


def mean_interval(values: list[float]) -> tuple[float, float, float] | None:
    """Mean and the 95% t interval of the mean over seeds; None under 2 values."""
    from scipy import stats

    if len(values) < 2:
        return None
    mean, sem = statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))
    if sem == 0:
        return mean, mean, mean
    low, high = stats.t.interval(0.95, len(values) - 1, loc=mean, scale=sem)
    return mean, float(low), float(high)


def interval90(a: list[float], b: list[float]) -> tuple[float, float] | None:
    """The 90% Welch interval of mean(a) - mean(b), or None without spread."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2 or (statistics.variance(a) == 0 and statistics.variance(b) == 0):
        return None
    found = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.90)
    return float(found.low), float(found.high)


def power_at(a: list[float], b: list[float], gap: float, alpha: float) -> float | None:
    """Power to detect `gap` at the rows' pooled spread and seed counts (two-sided)."""
    from statsmodels.stats.power import TTestIndPower

    if len(a) < 2 or len(b) < 2:
        return None
    sd = math.sqrt((statistics.variance(a) + statistics.variance(b)) / 2)
    if sd == 0:
        return 1.0
    power = float(TTestIndPower().power(effect_size=gap / sd, nobs1=len(a), ratio=len(b) / len(a), alpha=alpha))
    if math.isfinite(power):
        return power
    return two_tailed_power(gap / sd, len(a), len(b), alpha)


def two_tailed_power(effect: float, n_a: int, n_b: int, alpha: float) -> float:
    """The two-sided t-test's power from the noncentral t, both tails as upper tails.

    P(T > c) + P(T < -c) for T ~ t(df, nc), nc = effect * sqrt(n_a n_b / (n_a + n_b)),
    df = n_a + n_b - 2, c the t quantile at 1 - alpha / 2. The lower tail is read as
    P(T' > c) with T' ~ t(df, -nc), which scipy evaluates where its cdf far below a
    large nc gives NaN (and so does TTestIndPower, which power_at asks first)."""
    from scipy.stats import nct, t

    df = n_a + n_b - 2
    nc = effect * math.sqrt(n_a * n_b / (n_a + n_b))
    critical = float(t.isf(alpha / 2, df))
    return float(nct.sf(critical, df, nc) + nct.sf(critical, df, -nc))
