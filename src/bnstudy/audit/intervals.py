"""The audit's bootstrap intervals, in NumPy alone (the audit installs without the study's Numba).

:func:`bootstrap_examples` is the study's estimator and interval
(:func:`bnstudy.base.stats.bootstrap_examples`, the same draws and the same sums): a percentile
bootstrap over examples, stratified by label when the strata can carry it. Two rules keep the
intervals honest for small samples:

- a stratum of fewer than :data:`MIN_STRATUM` examples cannot show its own spread (one example
  resampled is always that example: a zero-width interval), so the audit resamples the examples
  without strata when any stratum is that small (:func:`strata_or_none`);
- each tail of a ``confidence`` interval needs :data:`TAIL_RESAMPLES` resamples beyond it
  (:func:`min_resamples`: 200 at 95%, 1,000 at 99%); fewer are refused.

The audit's intervals are :func:`seeded_interval` (each its own seed, derived from the audit's),
around the means of :func:`mean_share`.
"""

from __future__ import annotations

import math

import numpy as np

from bnstudy.base.runtime import STREAM_BOOTSTRAP, derive_seed

MIN_STRATUM = 5
TAIL_RESAMPLES = 5


def min_resamples(confidence: float) -> int:
    """The fewest resamples whose tails each hold :data:`TAIL_RESAMPLES` resamples at ``confidence``."""
    alpha = (1 - confidence) / 2
    return max(1, math.ceil(round(TAIL_RESAMPLES / alpha, 6)))


def strata_or_none(strata):
    """``strata`` if every stratum holds at least :data:`MIN_STRATUM` examples, else ``None`` (unstratified)."""
    if strata is None:
        return None
    counts = np.unique(np.asarray(strata), return_counts=True)[1]
    return strata if len(counts) and counts.min() >= MIN_STRATUM else None


def bootstrap_examples(per_example, resamples: int, confidence: float, rng: np.random.Generator, strata=None):
    """Percentile interval ``(low, high)`` of the mean of ``per_example`` values, resampling examples.

    Without ``strata`` each resample draws ``len(per_example)`` examples with replacement; with
    them, stratum by stratum in sorted order, as many of each as it holds. Each resample's mean
    adds its values in the order drawn (a sequential sum, as the study's kernel adds them); the
    percentiles are NumPy's linear interpolation between the sorted means.
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
        idx = np.concatenate(blocks, axis=1)
    means = np.cumsum(v[idx], axis=1)[:, -1] / idx.shape[1]
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def mean_share(values) -> float:
    """The mean of ``values`` (``math.fsum``: exactly rounded), NaN for none."""
    v = [float(x) for x in values]
    return math.fsum(v) / len(v) if v else float("nan")


def seeded_interval(values, strata, opts, code, b, unstratified: list | None = None, what: str = ""):
    """The bootstrap interval of the mean of ``values``: NaN for fewer than 2 values; resampled within
    ``strata`` only where every stratum holds :data:`MIN_STRATUM` values (else ``what`` goes to
    ``unstratified``)."""
    if len(values) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(derive_seed(opts.seed, STREAM_BOOTSTRAP, code, int(b)))
    usable = strata_or_none(strata)
    if strata is not None and usable is None and unstratified is not None:
        unstratified.append(what)
    return bootstrap_examples(np.asarray(values, np.float64), opts.resamples, opts.confidence, rng, strata=usable)
