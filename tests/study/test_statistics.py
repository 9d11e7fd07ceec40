"""Welch and Holm decisions on small examples computed by hand."""

import math

import pytest
from scipy import stats

from nmt_study.statistics import decide, describe, holm, mean_interval, welch


def test_welch_by_hand():
    # a: mean 2, variance 1; b: mean 6, variance 4; n = 3 each
    # se² = 1/3 + 4/3 = 5/3; t = -4 / sqrt(5/3) = -3.098; df = (5/3)² / ((1/3)²/2 + (4/3)²/2) = 50/17
    c = welch([1, 2, 3], [4, 6, 8])
    assert c.kind == "welch" and c.gap == -4
    assert c.df == pytest.approx(50 / 17)
    assert c.p == pytest.approx(2 * stats.t.sf(4 / math.sqrt(5 / 3), 50 / 17))
    assert c.p == pytest.approx(0.0548, abs=5e-4)           # not below 5%: the old floored table said so too
    half = stats.t.ppf(0.975, 50 / 17) * math.sqrt(5 / 3)   # 3.219 * 1.291
    assert (c.low, c.high) == pytest.approx((-4 - half, -4 + half))


def test_holm_by_hand():
    # m = 4, sorted 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop there
    assert holm([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]
    assert holm([0.04]) == [True]
    assert holm([0.04, 0.04]) == [False, False]              # 0.04 > 0.025: each alone would pass
    assert holm([]) == []


def test_decide_corrects_over_the_family_and_never_tests_zero_spread():
    clear = welch([30.0, 30.2, 30.1], [25.0, 25.3, 25.1])    # p ~ 1e-5
    weak = welch([30.0, 30.9, 30.1], [29.0, 29.9, 29.5])     # p ~ 0.07
    flat = welch([100.0, 100.0], [100.0, 100.0])
    apart = welch([100.0, 100.0], [75.0, 75.0])
    alone = welch([30.0], [29.0, 29.5])
    assert [c.kind for c in (flat, apart, alone)] == ["no spread", "no spread", "too few seeds"]
    readings = decide([clear, weak, flat, apart, alone])
    assert readings == ["differs", "no finding", "equal, no spread", "unequal, no spread", "too few seeds"]
    assert describe(apart, readings[3]) == "+25.00: unequal, no spread"
    assert describe(clear, readings[0]) == "+4.97 [+4.65, +5.28], p = 5.73e-06: differs"   # 30.1 - 25.13


def test_a_family_of_many_comparisons_needs_smaller_p():
    # p = 0.03 alone is a finding; among ten comparisons with nothing else below 0.005 it is not
    assert holm([0.03]) == [True]
    assert holm([0.03] + [0.5] * 9) == [False] + [False] * 9


def test_mean_interval():
    mean, low, high = mean_interval([1.0, 2.0, 3.0])            # sem = 1/sqrt(3), t(0.975, 2) = 4.303
    assert mean == 2 and (low, high) == pytest.approx((2 - 4.3027 / math.sqrt(3), 2 + 4.3027 / math.sqrt(3)),
                                                       abs=1e-3)
    assert mean_interval([5.0]) is None
    assert mean_interval([5.0, 5.0]) == (5.0, 5.0, 5.0)


def test_one_side_without_spread_is_tested_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = welch([100.0, 100.0, 100.0], [99.7, 100.0, 99.85])
    # se = sd_b / sqrt(3) = 0.15 / 1.732 = 0.0866, t = 0.15 / 0.0866 = 1.732 at df 2: p = 0.225
    assert c.kind == "welch" and c.p == pytest.approx(0.2254, abs=1e-3)


def test_power_where_statsmodels_gives_nan():
    """Two seeds a row 0.2 BLEU apart and a 2-BLEU gap (effect ~10): TTestIndPower (scipy
    1.17, statsmodels 0.14) says NaN there (the noncentral t's cdf far below its centre);
    the two upper tails do not, and power_at falls back to them."""
    from nmt_study.statistics import power_at, two_tailed_power

    # effect 0: each tail holds alpha / 2 of the central t, so the power is alpha
    assert two_tailed_power(0.0, 2, 2, 0.05) == pytest.approx(0.05)
    # where statsmodels answers, the two agree (effect 3, n 2 + 2: 0.3874)
    assert two_tailed_power(3.0, 2, 2, 0.05) == pytest.approx(0.38740, abs=1e-5)
    # effect 9.5, df 2, nc 9.5: P(T > 4.303) = 0.98833; the lower tail is ~0
    assert two_tailed_power(9.5, 2, 2, 0.05) == pytest.approx(0.98833, abs=1e-5)
    power = power_at([38.0, 38.2], [36.1, 36.3], 2.0, 0.05)     # pooled sd 0.1414: effect 14.1
    assert math.isfinite(power) and 0.999 < power <= 1.0
