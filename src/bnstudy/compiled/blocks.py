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
    """``wt[k, o] = w[o, k]``: a copy, so any order gives the same bits. Rows of ``w`` go eight at a
    time, so each row of ``wt`` receives eight neighbouring values per visit: five times as fast
    as one element at a time down a column (the training loop transposes every weight each step,
    which was 44% of an MLP step at batch 2)."""
    oo, kk = w.shape
    o = 0
    while o + 8 <= oo:
        w0, w1, w2, w3, w4, w5, w6, w7 = w[o], w[o + 1], w[o + 2], w[o + 3], w[o + 4], w[o + 5], w[o + 6], w[o + 7]
        for k in range(kk):
            r = wt[k]
            r[o], r[o + 1], r[o + 2], r[o + 3] = w0[k], w1[k], w2[k], w3[k]
            r[o + 4], r[o + 5], r[o + 6], r[o + 7] = w4[k], w5[k], w6[k], w7[k]
        o += 8
    while o < oo:
        for k in range(kk):
            wt[k, o] = w[o, k]
        o += 1


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
