"""Intervals: over seeds (Student t; for shares on the logit scale, for positive quantities on
the log scale), over examples (bootstrap), and over networks and examples together (crossed
variance components).

Sums here are exact-then-rounded (``math.fsum``: the correctly rounded sum of
the values, so the same on every machine and in every order) or, for the
bootstrap's many resample means, a compiled loop adding each resample's values
in the order drawn. The Student-t quantile comes from ``scipy.special`` (:func:`t_quantile`).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pandas as pd

from bnstudy.base.fixedmath import JIT


def mean_sd(values) -> tuple[float, float]:
    """Mean and sample standard deviation (``n - 1``), each sum correctly rounded; sd NaN for one value."""
    v = [float(x) for x in values]
    n = len(v)
    mean = math.fsum(v) / n
    if n < 2:
        return mean, float("nan")
    return mean, math.sqrt(math.fsum((x - mean) * (x - mean) for x in v) / (n - 1))


def t_quantile(q: float, df: float) -> float:
    """Student's t quantile: ``scipy.special.stdtrit``, the function ``scipy.stats.t.ppf`` calls (the same
    bits; tests/base/test_stats.py holds them equal), without importing ``scipy.stats`` (0.4-0.6 CPU s of a
    job's start-up). Imported here, not at the top: most jobs need no quantile."""
    from scipy.special import stdtrit

    return float(stdtrit(df, q))


def seed_interval(values, confidence: float = 0.95) -> tuple[float, float, float, float]:
    """Mean, sample standard deviation and a Student-t interval for the mean over seeds.

    With one seed the spread is unknown: std and interval are NaN.
    """
    n = len(values)
    mean, sd = mean_sd(values)
    if n < 2:
        return mean, float("nan"), float("nan"), float("nan")
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return mean, sd, mean - half, mean + half


def adjusted_confidence(confidence: float, family: int) -> float:
    """Bonferroni: each of ``family`` intervals at ``1 - (1 - confidence) / family``, so that
    all of them hold together with probability at least ``confidence``."""
    if family < 1:
        raise ValueError(f"a family has at least one member, got {family}")
    return 1 - (1 - confidence) / family


def _expit(x: float) -> float:
    from bnstudy.base.fixedmath import exp

    return 1 / (1 + exp(-x)) if x >= 0 else exp(x) / (1 + exp(x))


def logit_interval(mean: float, se: float, quantile: float) -> tuple[float, float]:
    """``mean +- quantile * se`` for a share, on the logit scale and mapped back (delta
    method: the standard error on the logit scale is ``se / (mean (1 - mean))``), so both
    ends lie strictly within (0, 1) and the interval contains ``mean``. A share of exactly
    0 or 1 (every value at the bound) gives the degenerate interval ``[mean, mean]``."""
    if not (math.isfinite(mean) and math.isfinite(se)):
        return float("nan"), float("nan")
    if mean <= 0 or mean >= 1:
        return mean, mean
    from bnstudy.base.fixedmath import log

    centre = log(mean / (1 - mean))
    half = quantile * se / (mean * (1 - mean))
    if half == 0:
        return mean, mean
    # the round trip through the logit may move an end by an ulp past the mean: keep it in
    return min(_expit(centre - half), mean), max(_expit(centre + half), mean)


def share_interval(values, confidence: float = 0.95) -> tuple[float, float, float, float]:
    """Mean, sample sd and a bounded interval over seeds for a share (an accuracy, a flip rate).

    The Student-t interval (``n - 1`` degrees of freedom) is formed on the logit scale
    around the logit of the mean (:func:`logit_interval`) and mapped back, so it never
    leaves [0, 1], as a t interval on the raw scale can with few seeds. Where the mean is
    far from 0 and 1 the two nearly coincide. With one seed the interval is NaN."""
    n = len(values)
    mean, sd = mean_sd(values)
    if n < 2:
        return mean, float("nan"), float("nan"), float("nan")
    lo, hi = logit_interval(mean, sd / math.sqrt(n), t_quantile(0.5 + confidence / 2, n - 1))
    return mean, sd, lo, hi


def log_interval(mean: float, se: float, quantile: float) -> tuple[float, float]:
    """``mean +- quantile * se`` for a positive quantity (an error, a distance), on the log scale
    and mapped back (delta method: the standard error of the log is ``se / mean``), so both ends
    are positive and the interval contains ``mean``; the same rule as :func:`logit_interval`
    with one bound instead of two. A mean of exactly 0 (every value 0) gives ``[0, 0]``."""
    if not (math.isfinite(mean) and math.isfinite(se)):
        return float("nan"), float("nan")
    if mean <= 0:
        return mean, mean
    from bnstudy.base.fixedmath import (
        exp,  # the same bits on every CPU (libm's exp differs between its FMA and plain paths)
    )

    half = quantile * se / mean
    if half == 0:
        return mean, mean
    # the round trip through exp may move an end by an ulp past the mean: keep it in
    return min(mean * exp(-half), mean), max(mean * exp(half), mean)


def positive_interval(values, confidence: float = 0.95) -> tuple[float, float, float, float]:
    """Mean, sample sd and a bounded interval over seeds (or shuffles) for a quantity that cannot
    be negative: the Student-t interval (``n - 1`` degrees of freedom) formed on the log scale
    (:func:`log_interval`), which never reaches below zero, as a t interval on the raw scale can
    with few values. With one value the interval is NaN."""
    n = len(values)
    mean, sd = mean_sd(values)
    if n < 2:
        return mean, float("nan"), float("nan"), float("nan")
    lo, hi = log_interval(mean, sd / math.sqrt(n), t_quantile(0.5 + confidence / 2, n - 1))
    return mean, sd, lo, hi


def _square(x: float) -> float:
    return x * x


def crossed_mean_variance(ms_a: float, df_a: int, ms_b: float, df_b: int, ms_res: float, df_res: int):
    """The variance of a crossed design's grand mean, times the number of cells, and its degrees
    of freedom: the one rule of every crossed interval (companions' networks x examples,
    serving's networks x stream replicates).

    With two random factors ``a`` and ``b`` and mean squares ``MS_a``, ``MS_b`` and ``MS_res``
    (the two-way analysis of variance without replication), ``MS_a + MS_b - MS_res`` estimates
    ``N_a N_b`` times the grand mean's variance ``s_a / N_a + s_b / N_b + s_res / (N_a N_b)``,
    with Satterthwaite's degrees of freedom ``(MS_a + MS_b - MS_res)^2 / (MS_a^2 / df_a +
    MS_b^2 / df_b + MS_res^2 / df_res)``. Each factor's own mean square estimates a lower bound
    on the same quantity (``E MS_a = s_res + N_b s_a``), so where the combination falls to or
    below the larger of ``MS_a`` and ``MS_b`` (it can: the subtraction is noisy) that mean square
    is used instead, with its own degrees of freedom. Returns ``(variance times N_a N_b, df)``."""
    combined = ms_a + ms_b - ms_res
    floor, df_floor = max((ms_a, df_a), (ms_b, df_b))
    if combined > floor:
        return combined, combined * combined / (ms_a * ms_a / df_a + ms_b * ms_b / df_b + ms_res * ms_res / df_res)
    return floor, float(df_floor)


def crossed_components(table, confidence: float = 0.95) -> dict:
    """Variance components of a share measured on every (network, example) cell.

    ``table``: networks x examples, each cell one example's flip rate under one network.
    A crossed random-effects model ``y = mu + a_network + b_example + e`` is fitted by the
    two-way analysis of variance without replication (method of moments):
    ``MS_net``, ``MS_ex`` and the residual ``MS_res`` estimate ``s_res + E s_net``,
    ``s_res + N s_ex`` and ``s_res``, so ``s_net = (MS_net - MS_res) / E`` and
    ``s_ex = (MS_ex - MS_res) / N`` (each floored at 0). The grand mean's variance over new
    networks and new examples is ``s_net / N + s_ex / E + s_res / (N E)``, estimated by
    :func:`crossed_mean_variance` (``(MS_net + MS_ex - MS_res) / (N E)`` with Satterthwaite's
    degrees of freedom, floored at ``max(MS_net, MS_ex) / (N E)`` with that mean square's own);
    the interval is :func:`logit_interval` with that t quantile. Sums are correctly rounded
    (``math.fsum``)."""
    y = np.asarray(table, dtype=np.float64)
    n_net, n_ex = y.shape
    if n_net < 2 or n_ex < 2:
        raise ValueError(f"crossed components need two networks and two examples, got {n_net} x {n_ex}")
    grand = math.fsum(y.ravel()) / y.size
    net = [math.fsum(r) / n_ex for r in y]
    ex = [math.fsum(c) / n_net for c in y.T]
    ss_net = n_ex * math.fsum((m - grand) * (m - grand) for m in net)  # x * x: libm's pow may differ by CPU
    ss_ex = n_net * math.fsum((m - grand) * (m - grand) for m in ex)
    ss_res = math.fsum(_square(float(y[i, j]) - net[i] - ex[j] + grand) for i in range(n_net) for j in range(n_ex))
    df_net, df_ex, df_res = n_net - 1, n_ex - 1, (n_net - 1) * (n_ex - 1)
    ms_net, ms_ex, ms_res = ss_net / df_net, ss_ex / df_ex, ss_res / df_res
    combined, df = crossed_mean_variance(ms_net, df_net, ms_ex, df_ex, ms_res, df_res)
    var_mean = combined / (n_net * n_ex)
    quantile = t_quantile(0.5 + confidence / 2, df)
    lo, hi = logit_interval(grand, math.sqrt(var_mean), quantile)
    s_net = max((ms_net - ms_res) / n_ex, 0.0)
    s_ex = max((ms_ex - ms_res) / n_net, 0.0)
    # each component's share of the grand mean's variance
    parts = {"networks": s_net / n_net, "examples": s_ex / n_ex, "residual": ms_res / (n_net * n_ex)}
    total = math.fsum(parts.values())
    return {
        "mean": grand,
        "networks": n_net,
        "examples": n_ex,
        "var_network": s_net,
        "var_example": s_ex,
        "var_residual": ms_res,
        "se": math.sqrt(var_mean),
        "df": df,
        "ci_low": lo,
        "ci_high": hi,
        "share_networks": parts["networks"] / total if total > 0 else float("nan"),
        "share_examples": parts["examples"] / total if total > 0 else float("nan"),
    }


def summarise_over_seeds(
    df: pd.DataFrame, by: list[str], value: str, confidence: float, bounded: bool = False, positive: bool = False
) -> pd.DataFrame:
    """One row per group: seeds, mean, sd, ci_low, ci_high of ``value``; ``bounded``: ``value``
    is a share and the interval is :func:`share_interval`'s (logit scale); ``positive``: ``value``
    cannot be negative and the interval is :func:`positive_interval`'s (log scale); else Student t."""
    interval = share_interval if bounded else positive_interval if positive else seed_interval
    rows = []
    for key, group in df.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        mean, sd, lo, hi = interval(group[value].tolist(), confidence)
        rows.append(dict(zip(by, key)) | {"seeds": len(group), "mean": mean, "sd": sd, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


@numba.njit(**JIT)
def _resample_means(v, idx, out):
    n = idx.shape[1]
    for r in range(idx.shape[0]):
        s = 0.0
        for j in range(n):
            s += v[idx[r, j]]
        out[r] = s / n


def bootstrap_examples(
    per_example: np.ndarray, resamples: int, confidence: float, rng: np.random.Generator, strata=None
) -> tuple[float, float]:
    """Percentile interval for the mean of per-example values, resampling examples.

    ``per_example`` holds one value per example (e.g. that example's flip rate over
    all its batches): batches of one example are correlated, examples are not, so
    examples are the unit resampled. With ``strata`` (one label per example, e.g.
    its class, when the examples were drawn a fixed number per class) each resample
    draws, stratum by stratum in sorted order, as many examples of that stratum as
    it has, with replacement, so every resample keeps the design's class counts.
    Each resample's mean adds its values in the order drawn; the percentiles are
    NumPy's linear interpolation between the sorted means.
    """
    v = np.ascontiguousarray(per_example, dtype=np.float64)
    if strata is None:
        idx = rng.integers(0, len(v), size=(resamples, len(v)))
    else:
        strata = np.asarray(strata)
        if len(strata) != len(v):
            raise ValueError(f"{len(strata)} strata for {len(v)} examples")
        blocks = []
        for s in np.unique(strata):
            rows = np.flatnonzero(strata == s)
            blocks.append(rows[rng.integers(0, len(rows), size=(resamples, len(rows)))])
        idx = np.ascontiguousarray(np.concatenate(blocks, axis=1))
    means = np.empty(resamples, np.float64)
    _resample_means(v, idx, means)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)
