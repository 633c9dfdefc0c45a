"""Intervals: over seeds (Student t) and over examples (bootstrap).

Sums here are exact-then-rounded (``math.fsum``: the correctly rounded sum of
the values, so the same on every machine and in every order) or, for the
bootstrap's many resample means, a compiled loop adding each resample's values
in the order drawn. The Student-t quantile comes from ``scipy.stats``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pandas as pd

from .fixedmath import JIT


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
    bits; tests/test_stats.py holds them equal), without importing ``scipy.stats`` (0.4-0.6 CPU s of a
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


def summarise_over_seeds(df: pd.DataFrame, by: list[str], value: str, confidence: float) -> pd.DataFrame:
    """One row per group: seeds, mean, sd, ci_low, ci_high of ``value``."""
    rows = []
    for key, group in df.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        mean, sd, lo, hi = seed_interval(group[value].tolist(), confidence)
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
