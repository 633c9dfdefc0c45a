"""The building blocks of the network's compiled arithmetic: one model, 2-D float32 arrays.

Linear layers, batch statistics, the batch-norm, renorm and row (layer, group)
normalisations of rows, and ghost batch norm's virtual batches: each in the one
order :mod:`bnstudy.kernels` states (no fast-math, no FMA, every reduction in the
order written, vectorised only across independent outputs). The kernels, the
training loop (:mod:`bnstudy.gradients`) and the probes (:mod:`bnstudy.probes`)
compose them, so that each computes a value the same way.
"""

from __future__ import annotations

import numba
import numpy as np

from .fixedmath import JIT
from .normalisers import BATCH, GHOST, RENORM


@numba.njit(**JIT)
def batch_statistics(kind):
    """Whether kind ``kind`` normalises with batch statistics in training mode."""
    return kind == BATCH or kind == RENORM or kind == GHOST


@numba.njit(**JIT)
def virtual_batches(n, size):
    """Ghost batch norm's virtual batches in a batch of ``n`` rows: ``max(1, n // size)``."""
    return max(1, n // size)


@numba.njit(**JIT)
def virtual_batch(n, size, parts, v):
    """``(first row, rows)`` of virtual batch ``v`` of ``parts`` in a batch of ``n`` rows:
    ``size`` rows from ``v * size``, the last to the batch's end (one part: the batch)."""
    lo = v * size
    return lo, (n - lo if v == parts - 1 else size)


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


@numba.njit(**JIT)
def batch_moments(h, start, n, mean, var):
    """Mean and biased variance per feature of rows ``start .. start + n - 1`` of ``h``."""
    f_ = h.shape[1]
    count = np.float32(n)
    for f in range(f_):
        mean[f] = 0
    for r in range(start, start + n):
        for f in range(f_):
            mean[f] += h[r, f]
    for f in range(f_):
        mean[f] = mean[f] / count
        var[f] = 0
    for r in range(start, start + n):
        for f in range(f_):
            dev = h[r, f] - mean[f]
            var[f] += dev * dev
    for f in range(f_):
        var[f] = var[f] / count


@numba.njit(**JIT)
def renorm_rd(mean, var, running_mean, running_var, eps, rmax, dmax, r, d):
    """Batch renorm's ``r`` and ``d`` per feature (constants: no gradient flows through them)."""
    low = np.float32(1.0) / rmax
    for f in range(mean.shape[0]):
        sigma = np.sqrt(running_var[f] + eps)
        r[f] = min(max(np.sqrt(var[f] + eps) / sigma, low), rmax)
        d[f] = min(max((mean[f] - running_mean[f]) / sigma, -dmax), dmax)


@numba.njit(**JIT)
def batch_norm_rows(h, start, n, mean, invstd, gamma, beta, r, d, renorm, relu, out, out_start, xhat):
    """Normalise rows ``start ..`` of ``h`` with per-feature ``mean``/``invstd`` into ``out``
    from row ``out_start``; ``xhat`` (same rows as ``out``, or a 0-row array) keeps ``xhat``."""
    f_ = h.shape[1]
    keep = xhat.shape[0] > 0
    for j in range(n):
        for f in range(f_):
            xh = (h[start + j, f] - mean[f]) * invstd[f]
            if keep:
                xhat[out_start + j, f] = xh
            if renorm:
                y = (xh * r[f] + d[f]) * gamma[f] + beta[f]
            else:
                y = xh * gamma[f] + beta[f]
            if relu and not y > 0:
                y = np.float32(0)
            out[out_start + j, f] = y


@numba.njit(**JIT)
def row_norm(h, i, groups, eps, gamma, beta, relu, out, xhat, rstd):
    """Layer/group norm of row ``i`` of ``h`` into ``out[i]``; keeps ``xhat[i]`` and
    ``rstd[i, g]`` when those arrays have rows (pass 0-row arrays otherwise)."""
    f_ = h.shape[1]
    size = f_ // groups
    count = np.float32(size)
    keep = xhat.shape[0] > 0
    for g in range(groups):
        lo = g * size
        mean = np.float32(0)
        for f in range(lo, lo + size):
            mean += h[i, f]
        mean = mean / count
        var = np.float32(0)
        for f in range(lo, lo + size):
            dev = h[i, f] - mean
            var += dev * dev
        var = var / count
        inv = np.float32(1) / np.sqrt(var + eps)
        if keep:
            rstd[i, g] = inv
        for f in range(lo, lo + size):
            xh = (h[i, f] - mean) * inv
            if keep:
                xhat[i, f] = xh
            y = xh * gamma[f] + beta[f]
            if relu and not y > 0:
                y = np.float32(0)
            out[i, f] = y
