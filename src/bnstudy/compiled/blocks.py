"""The Linear layer's compiled arithmetic: one model, 2-D float32 arrays.

In the one order :mod:`bnstudy.compiled.kernels` states (no fast-math, no FMA, every
reduction in the order written, vectorised only across independent outputs). The
kernels, the training loop (:mod:`bnstudy.compiled.gradients`), the probes
(:mod:`bnstudy.compiled.probes`) and the convolutional network compose it with the
normalisers' arithmetic (:mod:`bnstudy.compiled.normkernels`), so that each computes a value
the same way.
"""

from __future__ import annotations

import numba

from bnstudy.base.fixedmath import JIT


@numba.njit(**JIT)
def transpose_into(w, wt):
    """``wt[k, o] = w[o, k]``."""
    for o in range(w.shape[0]):
        for k in range(w.shape[1]):
            wt[k, o] = w[o, k]


@numba.njit(**JIT)
def linear_t(a, wt, bias, out):
    """``out[i] = bias + a[i] @ wt`` for every row ``i``; ``wt`` is ``W^T``, ``(in, out)``.

    Rows go four at a time (each weight row is loaded once for four rows); every
    output is the bias plus the products added in ``k`` order, whatever the grouping.
    """
    n, kk = a.shape
    oo = wt.shape[1]
    i = 0
    while i + 4 <= n:
        for o in range(oo):
            out[i, o] = bias[o]
            out[i + 1, o] = bias[o]
            out[i + 2, o] = bias[o]
            out[i + 3, o] = bias[o]
        for k in range(kk):
            a0, a1, a2, a3 = a[i, k], a[i + 1, k], a[i + 2, k], a[i + 3, k]
            w = wt[k]
            for o in range(oo):
                out[i, o] += a0 * w[o]
                out[i + 1, o] += a1 * w[o]
                out[i + 2, o] += a2 * w[o]
                out[i + 3, o] += a3 * w[o]
        i += 4
    while i < n:
        for o in range(oo):
            out[i, o] = bias[o]
        for k in range(kk):
            a0 = a[i, k]
            w = wt[k]
            for o in range(oo):
                out[i, o] += a0 * w[o]
        i += 1
