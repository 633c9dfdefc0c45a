"""Intervals: over seeds (Student t) and over examples (bootstrap)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def seed_interval(values, confidence: float = 0.95) -> tuple[float, float, float, float]:
    """Mean, sample standard deviation and a Student-t interval for the mean over seeds.

    With one seed the spread is unknown: std and interval are NaN.
    """
    from scipy import stats  # here, not at the top: 0.8 s that most jobs do not need

    v = np.asarray(values, dtype=np.float64)
    mean = float(v.mean())
    if len(v) < 2:
        return mean, float("nan"), float("nan"), float("nan")
    sd = float(v.std(ddof=1))
    half = float(stats.t.ppf(0.5 + confidence / 2, len(v) - 1)) * sd / np.sqrt(len(v))
    return mean, sd, mean - half, mean + half


def summarise_over_seeds(df: pd.DataFrame, by: list[str], value: str, confidence: float) -> pd.DataFrame:
    """One row per group: seeds, mean, sd, ci_low, ci_high of ``value``."""
    rows = []
    for key, group in df.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        mean, sd, lo, hi = seed_interval(group[value], confidence)
        rows.append(dict(zip(by, key)) | {"seeds": len(group), "mean": mean, "sd": sd,
                                          "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def bootstrap_examples(per_example: np.ndarray, resamples: int, confidence: float,
                       rng: np.random.Generator) -> tuple[float, float]:
    """Percentile interval for the mean of per-example values, resampling examples.

    ``per_example`` holds one value per example (e.g. that example's flip rate over
    all its batches): batches of one example are correlated, examples are not, so
    examples are the unit resampled.
    """
    v = np.asarray(per_example, dtype=np.float64)
    idx = rng.integers(0, len(v), size=(resamples, len(v)))
    means = v[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)
