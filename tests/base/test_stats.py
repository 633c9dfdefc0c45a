"""Intervals against scipy.stats and NumPy, on fixed and on generated inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from bnstudy.base import stats

finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=2, max_size=12), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_seed_interval_is_scipys_t_interval(values, confidence):
    mean, sd, lo, hi = stats.seed_interval(values, confidence)
    v = np.asarray(values)
    assert mean == pytest.approx(v.mean(), abs=1e-9)
    assert sd == pytest.approx(v.std(ddof=1), abs=1e-9)
    if sd > 0:
        ref = sps.t.interval(confidence, len(v) - 1, loc=v.mean(), scale=sps.sem(v))
        assert (lo, hi) == pytest.approx(ref, abs=1e-9, rel=1e-9)
    assert lo <= mean <= hi


def test_seed_interval_by_hand_and_for_one_seed():
    mean, sd, lo, hi = stats.seed_interval([1.0, 2.0, 3.0], 0.95)
    assert (mean, sd) == (2.0, 1.0)
    half = 4.302652729749464 / np.sqrt(3)  # t(0.975, 2 df)
    assert (lo, hi) == pytest.approx((2 - half, 2 + half), rel=1e-12)
    mean, sd, lo, hi = stats.seed_interval([0.7], 0.95)
    assert mean == 0.7 and np.isnan(sd) and np.isnan(lo) and np.isnan(hi)


def test_summarise_over_seeds_groups_and_counts():
    df = pd.DataFrame({"g": ["a", "a", "b", "b", "b"], "x": [1.0, 3.0, 2.0, 2.0, 5.0]})
    out = stats.summarise_over_seeds(df, ["g"], "x", 0.9).set_index("g")
    assert out.loc["a", "seeds"] == 2 and out.loc["a", "mean"] == 2.0
    assert out.loc["b", "sd"] == pytest.approx(np.std([2, 2, 5], ddof=1))
    lo, hi = sps.t.interval(0.9, 2, loc=3.0, scale=sps.sem([2, 2, 5]))
    assert (out.loc["b", "ci_low"], out.loc["b", "ci_high"]) == pytest.approx((lo, hi))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=3, max_size=30), st.integers(0, 2**32 - 1), st.sampled_from([0.8, 0.95]))
def test_bootstrap_is_the_percentile_interval_of_resampled_example_means(values, seed, confidence):
    v = np.asarray(values)
    lo, hi = stats.bootstrap_examples(v, 400, confidence, np.random.default_rng(seed))
    idx = np.random.default_rng(seed).integers(0, len(v), size=(400, len(v)))
    means = v[idx].mean(axis=1)  # each resample has as many examples as the data
    alpha = (1 - confidence) / 2
    ref = np.quantile(means, [alpha, 1 - alpha])  # both tails: alpha halved
    assert (lo, hi) == pytest.approx(tuple(ref), abs=1e-12)
    assert v.min() - 1e-12 <= lo <= hi <= v.max() + 1e-12


def test_bootstrap_interval_narrows_with_more_examples_and_is_reproducible():
    rng = np.random.default_rng(0)
    small, large = rng.random(10), rng.random(400)
    w_small = np.diff(stats.bootstrap_examples(small, 2000, 0.95, np.random.default_rng(1)))[0]
    w_large = np.diff(stats.bootstrap_examples(large, 2000, 0.95, np.random.default_rng(1)))[0]
    assert w_large < w_small / 3
    a = stats.bootstrap_examples(large, 500, 0.95, np.random.default_rng(2))
    assert a == stats.bootstrap_examples(large, 500, 0.95, np.random.default_rng(2))
    # a 95% interval of a mean of uniforms over 400 examples: about +-1.96 * 0.2887 / 20
    assert w_large == pytest.approx(2 * 1.96 * 0.2887 / 20, rel=0.15)


def test_bootstrap_refuses_strata_of_another_length():
    with pytest.raises(ValueError, match="^2 strata for 3 examples$"):
        stats.bootstrap_examples(np.zeros(3), 10, 0.95, np.random.default_rng(0), strata=[0, 1])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=2, max_size=8), st.sampled_from([0.8, 0.95, 0.99]))
def test_share_interval_stays_within_zero_and_one_and_contains_the_mean(values, confidence):
    mean, sd, lo, hi = stats.share_interval(values, confidence)
    assert mean == pytest.approx(np.mean(values), abs=1e-12)
    assert 0 <= lo <= mean <= hi <= 1
    # a spread gives an interval of some width, unless the mean sits within float resolution of 0 or 1
    # (0.9999999999999999 five times: the logit interval maps back onto one float)
    if 1e-9 < mean < 1 - 1e-9 and sd > 0:
        assert lo < hi


def test_share_interval_by_hand_on_the_logit_scale():
    values = [0.6, 0.9, 1.0]  # a t interval on the raw scale leaves [0, 1]: [0.34, 1.33]
    _, _, tlo, thi = stats.seed_interval(values, 0.95)
    assert thi > 1
    mean, sd, lo, hi = stats.share_interval(values, 0.95)
    se_logit = sd / np.sqrt(3) / (mean * (1 - mean))
    q = sps.t.ppf(0.975, 2)
    centre = np.log(mean / (1 - mean))
    assert (lo, hi) == pytest.approx(
        (1 / (1 + np.exp(-(centre - q * se_logit))), 1 / (1 + np.exp(-(centre + q * se_logit))))
    )
    assert stats.share_interval([1.0, 1.0, 1.0], 0.95)[2:] == (1.0, 1.0)  # degenerate: every one
    assert stats.share_interval([0.0, 0.0], 0.95)[2:] == (0.0, 0.0)  # degenerate: none


def test_bonferroni_confidence():
    assert stats.adjusted_confidence(0.95, 1) == 0.95
    assert stats.adjusted_confidence(0.95, 6) == pytest.approx(1 - 0.05 / 6)
    with pytest.raises(ValueError):
        stats.adjusted_confidence(0.95, 0)


def test_crossed_components_recover_planted_variances():
    rng = np.random.default_rng(3)
    nets, examples = 40, 400
    a = rng.normal(0, 0.05, size=(nets, 1))  # sd 0.05 between networks
    b = rng.normal(0, 0.10, size=(1, examples))  # sd 0.10 between examples
    y = 0.4 + a + b + rng.normal(0, 0.02, size=(nets, examples))
    c = stats.crossed_components(y, 0.95)
    assert c["var_network"] == pytest.approx(a.var(ddof=1), rel=0.05)
    assert c["var_example"] == pytest.approx(b.var(ddof=1), rel=0.05)
    assert c["var_residual"] == pytest.approx(0.02**2, rel=0.05)
    # the mean's variance from both sources: the interval is wider than either source alone gives
    assert c["se"] ** 2 == pytest.approx(c["var_network"] / nets + c["var_example"] / examples, rel=0.05)
    assert 0 < c["ci_low"] < c["mean"] < c["ci_high"] < 1
    assert c["share_networks"] + c["share_examples"] <= 1


def test_crossed_components_by_hand_two_by_two():
    y = np.array([[0.2, 0.4], [0.4, 0.6]])  # additive: network +0.2, example +0.2, no residual
    c = stats.crossed_components(y, 0.95)
    # MS_net = MS_ex = 2 * 2 * 0.1**2 = 0.04, MS_res = 0
    assert c["var_network"] == pytest.approx(0.02) and c["var_example"] == pytest.approx(0.02)
    assert c["var_residual"] == pytest.approx(0.0, abs=1e-15)
    assert c["se"] == pytest.approx(np.sqrt(0.08 / 4))
    assert c["df"] == pytest.approx(0.08**2 / (0.04**2 + 0.04**2))


def test_t_quantile_is_scipy_stats_t_ppf_bit_for_bit():
    """The light quantile (scipy.special) gives the bits scipy.stats.t.ppf gives, so swapping it in
    changed no interval; and it is the quantile (the t CDF at it returns the probability)."""
    from scipy import special
    from scipy import stats as sps

    from bnstudy.base.stats import t_quantile

    for df in [*range(1, 60), 0.5, 2.7, 17.25, 1e3, 1e6]:
        for q in (0.6, 0.75, 0.9, 0.95, 0.975, 0.99, 0.995, 0.9995):
            assert t_quantile(q, df) == float(sps.t.ppf(q, df)), (q, df)
            assert abs(float(special.stdtr(df, t_quantile(q, df))) - q) < 1e-12


def test_crossed_mean_variance_by_hand():
    # the combination above both mean squares: Satterthwaite, written out
    v, df = stats.crossed_mean_variance(0.05, 4, 0.04, 9, 0.01, 36)
    assert v == pytest.approx(0.08)
    assert df == pytest.approx(0.08**2 / (0.05**2 / 4 + 0.04**2 / 9 + 0.01**2 / 36))
    # the residual as large as the smaller mean square: the larger one, with its own df
    assert stats.crossed_mean_variance(0.05, 4, 0.02, 9, 0.03, 36) == (0.05, 4.0)
    assert stats.crossed_mean_variance(0.02, 4, 0.05, 9, 0.03, 36) == (0.05, 9.0)
    # nothing varies: zero, with a finite df
    assert stats.crossed_mean_variance(0.0, 4, 0.0, 9, 0.0, 36) == (0.0, 9.0)


def test_companions_and_serving_floor_the_variance_alike():
    """One rule for both crossed intervals: a table whose residual swamps the factors takes the
    larger factor's mean square in both (it was MS_res in one and max(MS_a, MS_b) in the other)."""
    from bnstudy.studies.serving import science as serving

    y = np.array([[0.30, 0.50, 0.40], [0.50, 0.30, 0.42], [0.41, 0.39, 0.40]])
    c = stats.crossed_components(y, 0.95)
    s = serving.crossed_interval(y, 0.95)
    n, e = y.shape
    grand = y.mean()
    ms_net = e * ((y.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    ms_ex = n * ((y.mean(axis=0) - grand) ** 2).sum() / (e - 1)
    assert c["se"] ** 2 == pytest.approx(max(ms_net, ms_ex) / (n * e))
    assert s["sd"] ** 2 / (n * e) == pytest.approx(max(ms_net, ms_ex) / (n * e))
    assert c["df"] == s["df"] == 2.0


def test_positive_interval_stays_above_zero_and_holds_the_mean():
    # a t interval on the raw scale reaches below zero here: mean 0.01, sd 0.01, 3 values
    values = [0.001, 0.008, 0.021]
    mean, sd, lo, hi = stats.positive_interval(values, 0.95)
    raw = stats.seed_interval(values, 0.95)
    assert raw[2] < 0 < lo < mean < hi
    # the log-scale interval written out: mean * exp(-+ q * se / mean)
    q = stats.t_quantile(0.975, 2)
    half = q * (sd / np.sqrt(3)) / mean
    assert lo == pytest.approx(mean * np.exp(-half)) and hi == pytest.approx(mean * np.exp(half))
    # every value zero: [0, 0] (printed as "exactly 0"); one value: no interval
    assert stats.positive_interval([0.0, 0.0, 0.0])[2:] == (0.0, 0.0)
    assert all(np.isnan(v) for v in stats.positive_interval([0.2])[1:])


def test_summarise_over_seeds_positive_uses_the_log_scale():
    df = pd.DataFrame({"g": ["a"] * 3, "v": [0.001, 0.008, 0.021]})
    row = stats.summarise_over_seeds(df, ["g"], "v", 0.95, positive=True).iloc[0]
    assert (row.ci_low, row.ci_high) == stats.positive_interval([0.001, 0.008, 0.021], 0.95)[2:]


def test_share_and_positive_intervals_of_two_values_and_of_non_finite_inputs():
    # two values: one degree of freedom, an interval (not the NaN of a single value)
    q = stats.t_quantile(0.975, 1)
    mean, sd, lo, hi = stats.positive_interval([0.1, 0.3], 0.95)
    half = q * (sd / np.sqrt(2)) / mean
    assert (mean, lo, hi) == pytest.approx((0.2, 0.2 * np.exp(-half), 0.2 * np.exp(half)), rel=1e-12)
    mean, sd, lo, hi = stats.share_interval([0.6, 0.8], 0.95)
    assert mean == pytest.approx(0.7) and 0 < lo < 0.6 and 0.8 < hi < 1
    # a non-finite mean or standard error: no interval, both ends NaN
    for bad in ((float("nan"), 0.1), (0.5, float("nan")), (float("inf"), 0.1)):
        assert all(np.isnan(v) for v in stats.log_interval(*bad, 2.0)), bad
        assert all(np.isnan(v) for v in stats.logit_interval(*bad, 2.0)), bad
