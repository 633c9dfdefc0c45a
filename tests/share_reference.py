"""Reference intervals for shares, written independently of :mod:`bnstudy.base.stats` for the value
tests: the Student-t interval on the logit scale around the logit of the mean (delta method),
with SciPy's ``logit``/``expit`` and t quantile."""

from __future__ import annotations

import numpy as np
from scipy import special
from scipy import stats as sps


def logit_t_interval(values, confidence):
    """``(mean, sd, lo, hi)`` of shares over seeds; ``[m, m]`` when the mean is 0 or 1 or sd is 0."""
    v = np.asarray(values, dtype=float)
    m, sd = v.mean(), v.std(ddof=1)
    if m <= 0 or m >= 1 or sd == 0:
        return m, sd, m, m
    half = sps.t.ppf(0.5 + confidence / 2, len(v) - 1) * sd / np.sqrt(len(v)) / (m * (1 - m))
    return m, sd, min(special.expit(special.logit(m) - half), m), max(special.expit(special.logit(m) + half), m)


def log_t_interval(values, confidence):
    """``(mean, sd, lo, hi)`` of a positive quantity over seeds: the Student-t interval on the log
    scale around the log of the mean (delta method: the standard error over the mean), NumPy's
    ``exp``; ``[m, m]`` when the mean is 0 or sd is 0."""
    v = np.asarray(values, dtype=float)
    m, sd = v.mean(), v.std(ddof=1)
    if m <= 0 or sd == 0:
        return m, sd, m, m
    half = sps.t.ppf(0.5 + confidence / 2, len(v) - 1) * sd / np.sqrt(len(v)) / m
    return m, sd, min(m * np.exp(-half), m), max(m * np.exp(half), m)
