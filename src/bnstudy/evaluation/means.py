"""The mean of values added in order, and the sum of squared deviations from it: a fixed-order kernel,
the same bits on every CPU. Apart from the networks' compiled code on purpose: the summary rules load
only this of the evaluation's compiled modules, so editing a network kernel does not re-run them."""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT


@numba.njit(**JIT)
def _sum_and_squares(v):
    """Mean of ``v`` (summed in order) and the sum of squared deviations from it (in order)."""
    n = v.shape[0]
    s = 0.0
    for i in range(n):
        s += v[i]
    mean = s / n
    ss = 0.0
    for i in range(n):
        d = v[i] - mean
        ss += d * d
    return mean, ss


def mean_in_order(values) -> float:
    """Mean of ``values`` in float64, added in the order given, divided by their number."""
    v = np.ascontiguousarray(values, dtype=np.float64)
    if v.ndim != 1 or len(v) == 0:
        raise ValueError(f"mean_in_order needs a non-empty 1-D sequence, got shape {v.shape}")
    return float(_sum_and_squares(v)[0])
