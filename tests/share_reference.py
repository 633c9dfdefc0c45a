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


def crossed_reference(table, confidence):
    """Mean, interval and variance components of a networks x examples table, written out:
    the two-way analysis of variance without replication by NumPy's row and column means, the
    grand mean's variance ``(MS_net + MS_ex - MS_res) / (N E)`` with Satterthwaite's degrees of
    freedom, or, where that is not above the larger of ``MS_net`` and ``MS_ex``, that mean square
    over ``N E`` with its own degrees of freedom; the t interval on the logit scale."""
    y = np.asarray(table, dtype=float)
    n, e = y.shape
    grand = y.mean()
    rows, cols = y.mean(axis=1) - grand, y.mean(axis=0) - grand
    resid = y - grand - rows[:, None] - cols[None, :]
    ms_n, ms_e = e * (rows**2).sum() / (n - 1), n * (cols**2).sum() / (e - 1)
    ms_r = (resid**2).sum() / ((n - 1) * (e - 1))
    combined = ms_n + ms_e - ms_r
    df = combined**2 / (ms_n**2 / (n - 1) + ms_e**2 / (e - 1) + ms_r**2 / ((n - 1) * (e - 1)))
    if combined <= max(ms_n, ms_e):
        combined, df = (ms_n, n - 1) if ms_n >= ms_e else (ms_e, e - 1)
    half = sps.t.ppf(0.5 + confidence / 2, df) * np.sqrt(combined / (n * e)) / (grand * (1 - grand))
    logit = np.log(grand / (1 - grand))
    s_n, s_e = max((ms_n - ms_r) / e, 0.0), max((ms_e - ms_r) / n, 0.0)
    parts = np.array([s_n / n, s_e / e, ms_r / (n * e)])
    return {
        "mean": grand,
        "ci": (1 / (1 + np.exp(-(logit - half))), 1 / (1 + np.exp(-(logit + half)))),
        "sd_networks": np.sqrt(s_n),
        "sd_examples": np.sqrt(s_e),
        "shares": parts / parts.sum(),
        "df": df,
    }
