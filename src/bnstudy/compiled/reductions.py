"""Fixed-order float64 reductions: column moments, weighted column sums, root mean squares.

NumPy's ``sum``, ``mean``, ``var`` and ``std`` add pairwise in blocks whose shape
depends on the SIMD width NumPy picked for the CPU, and BLAS does the same for dot
products, so their last bits differ between machines. These compiled loops add in
one order, written below, whatever the CPU (the rules are those of
:mod:`bnstudy.base.fixedmath`: no fast-math, no FMA, every reduction an explicit loop,
vectorised only across independent outputs):

- over rows (:func:`column_moments`, :func:`weighted_column_sums`, :func:`pooled_moments`): row 0, 1, 2, ...
  in the order the array holds them, every feature (column) an independent sum;
- over every element (:func:`sum_of_squares`, :func:`rms`): C order (row by row,
  left to right within a row), one running sum.

All sums are float64 whatever the input dtype (float32 values widen exactly).
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT


@numba.njit(**JIT)
def _column_moments(x, mean, var):
    n, features = x.shape
    mean[:] = 0.0
    for i in range(n):
        row = x[i]
        for f in range(features):
            mean[f] += row[f]
    for f in range(features):
        mean[f] = mean[f] / n
    var[:] = 0.0
    for i in range(n):
        row = x[i]
        for f in range(features):
            d = row[f] - mean[f]
            var[f] += d * d
    for f in range(features):
        var[f] = var[f] / n


def column_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and biased (ddof 0) variance of a 2-D array, in float64.

    Two passes: ``mean = (sum over rows in row order) / n``, then
    ``var = (sum over rows in row order of (x - mean)**2) / n``.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 2 or len(x) == 0:
        raise ValueError(f"column_moments needs a non-empty 2-D array, got shape {x.shape}")
    mean = np.empty(x.shape[1], np.float64)
    var = np.empty(x.shape[1], np.float64)
    _column_moments(x, mean, var)
    return mean, var


@numba.njit(**JIT)
def _weighted_column_sums(w, a, out):
    n, features = a.shape
    out[:] = 0.0
    for i in range(n):
        wi = w[i]
        row = a[i]
        for f in range(features):
            out[f] += wi * row[f]


def weighted_column_sums(w: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``out[f] = sum_i w[i] * a[i, f]``, the products added in row order ``i = 0, 1, ...``."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.ndim != 2 or w.shape != (a.shape[0],):
        raise ValueError(f"weights {w.shape} do not match the rows of {a.shape}")
    out = np.empty(a.shape[1], np.float64)
    _weighted_column_sums(w, a, out)
    return out


@numba.njit(**JIT)
def _sum_of_squares(flat):
    s = 0.0
    for i in range(flat.size):
        s += flat[i] * flat[i]
    return s


def sum_of_squares(a) -> float:
    """``sum(a**2)`` over every element, added in C order."""
    return float(_sum_of_squares(np.ascontiguousarray(a, dtype=np.float64).ravel()))


def rms(a) -> float:
    """Root mean square of every element: ``sqrt(sum_of_squares(a) / a.size)``."""
    a = np.asarray(a)
    if a.size == 0:
        raise ValueError("rms of an empty array")
    return float(np.sqrt(sum_of_squares(a) / a.size))


@numba.njit(**JIT)
def pooled_moments(h, mean, var):
    """``h`` is ``(N, F)``: mean and biased variance per feature (divisor ``N``) into ``mean`` and
    ``var`` (float64), rows in order 0, 1, ...; two passes."""
    n, f_ = h.shape
    for f in range(f_):
        mean[f] = 0.0
    for r in range(n):
        for f in range(f_):
            mean[f] += h[r, f]
    for f in range(f_):
        mean[f] = mean[f] / n
        var[f] = 0.0
    for r in range(n):
        for f in range(f_):
            d = h[r, f] - mean[f]
            var[f] += d * d
    for f in range(f_):
        var[f] = var[f] / n
