"""Comparisons paired by seed, as every study makes them.

For one seed, every normaliser starts from the same initial weights and sees the
same batch order (the initial weights and the data order come from streams derived
from the seed, :mod:`bnstudy.nets.train`), and every remedy or follow-up changes only
what it names of the same trained network. Two networks of one seed are therefore a
pair, and a comparison ``A - B`` is made seed by seed:

- the difference ``d_s = A(s) - B(s)`` per seed, and over seeds their mean with a paired
  Student-t interval (:func:`paired_interval`: the one-sample t interval of the ``d_s``: mean
  and sample standard deviation by :func:`bnstudy.base.stats.mean_sd`, sums correctly
  rounded; t quantile :func:`bnstudy.base.stats.t_quantile`);
- the same difference as a count of test rows: ``a_only`` rows that ``A`` labels
  correctly and ``B`` does not, ``b_only`` the reverse, ``a_only - b_only =
  n * d_s`` exactly; with an exact McNemar test on the discordant rows of each
  seed (:func:`mcnemar`): under the null hypothesis that ``A`` and ``B`` are equally accurate, a
  discordant row favours ``A`` with probability 1/2, so ``a_only`` is binomial
  ``(a_only + b_only, 1/2)``; the two-sided p-value is that of ``scipy.stats.binomtest``
  (1 when there is no discordant row), computed exactly in integers and rounded once
  (:func:`mcnemar_p`: scipy's goes through the C library's ``exp`` and ``log``, whose last
  bits differ between machines).

Counts are integers; nothing here depends on the CPU. Study 2's own comparisons, table by
table, are :mod:`bnstudy.studies.batch_size.paired`.
"""

from __future__ import annotations

import numpy as np

from bnstudy.base.stats import seed_interval


def mcnemar_p(a_only: int, n: int) -> float:
    """The exact two-sided p-value of ``a_only`` successes in ``n`` trials with probability 1/2:
    by symmetry twice the lower tail at ``min(a_only, n - a_only)``, at most 1 (what
    ``scipy.stats.binomtest(a_only, n, 0.5).pvalue`` defines: the outcomes no likelier than the
    one seen; at 1/2 no two pmf values nearer than a factor ``1 + 2/n`` tie). Hand-written for
    determinism: the tail's binomial coefficients are summed as Python integers and the quotient
    by ``2 ** n`` is rounded once (``int / int`` is correctly rounded), so the float is the same
    on every machine."""
    if n == 0:
        return 1.0
    k = min(int(a_only), n - int(a_only))
    if 2 * k == n:
        return 1.0
    term, tail = 1, 1  # C(n, 0)
    for i in range(k):
        term = term * (n - i) // (i + 1)  # C(n, i + 1), exact
        tail += term
    return min(1.0, (2 * tail) / (1 << n))


def mcnemar(correct_a, correct_b) -> tuple[int, int, float]:
    """``(a_only, b_only, p)``: discordant rows of two paired 0/1 vectors, exact two-sided McNemar
    p (:func:`mcnemar_p`)."""
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"paired rows differ in shape: {a.shape} and {b.shape}")
    a_only, b_only = int(np.count_nonzero(a & ~b)), int(np.count_nonzero(b & ~a))
    n = a_only + b_only
    p = mcnemar_p(a_only, n)
    return a_only, b_only, p


# Differences of shares this close are one difference rounded two ways (a share is a count over rows).
ROUNDING = 1e-12


def nil_if_rounding(mean: float, diffs) -> float:
    """``mean`` (the mean of ``diffs``, differences of shares), or exactly 0.0 where it lies within
    :data:`ROUNDING` of zero (relative to the largest difference). A share is a count over rows, so a
    mean of such differences is a multiple of one over rows times seeds (above 1e-7 in any config
    here) or zero; one this close to zero is zero rounded: ``4/18 - 5/18`` and ``5/18 - 4/18`` do not
    cancel exactly in floating point, and the paper would print the residue as ``-1 x 10^-15``."""
    scale = max([1.0, *(abs(float(d)) for d in diffs)])
    return 0.0 if abs(mean) <= ROUNDING * scale else mean


def paired_interval(a, b, confidence: float, bound: float = 1.0) -> dict:
    """Mean, sd and Student-t interval of the per-seed differences ``a[i] - b[i]`` (same seed order)
    of two shares (each in [0, 1]: accuracies, flip rates). The interval is clipped to [-1, 1], the
    range such a difference can take: with two or three seeds the t quantile (12.7 for one degree
    of freedom) carries an unclipped end past it. ``bound``: that range's half-width where the
    values are not shares (2 for two changes of a share, each in [-1, 1]). A NaN end (one seed)
    stays NaN. Differences equal to within :data:`ROUNDING` have no spread (sd 0, a point interval
    at their mean), as exactly equal ones do; a mean within it of zero is zero (:func:`nil_if_rounding`)."""
    a, b = list(a), list(b)
    if len(a) != len(b) or not a:
        raise ValueError(f"a paired comparison needs as many values on both sides, got {len(a)} and {len(b)}")
    diffs = [float(x) - float(y) for x, y in zip(a, b)]
    mean, sd, lo, hi = seed_interval(diffs, confidence)
    mean = nil_if_rounding(mean, diffs)
    if len(diffs) > 1 and max(diffs) - min(diffs) <= ROUNDING * max(1.0, *(abs(d) for d in diffs)):
        # the same difference in every seed but for the rounding of count / rows (4/18 - 0/18 and
        # 8/18 - 4/18 differ in the last bit): no spread, as for exactly equal differences
        sd, lo, hi = 0.0, mean, mean
    lo, hi = (-bound if lo < -bound else lo), (bound if hi > bound else hi)
    return {"seeds": len(diffs), "gain": mean, "sd": sd, "ci_low": lo, "ci_high": hi}
