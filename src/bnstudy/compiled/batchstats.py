"""The compiled arithmetic of the normalisers with batch statistics: batch norm, batch renorm, ghost batch norm.

One section of :mod:`bnstudy.compiled.normkernels`' arithmetic, in its discipline (float32, no
fast-math, no FMA, every reduction in the order written): a (virtual) batch's statistics
(:func:`batch_stats`, the probes' step too), the rows normalised with them, PyTorch's update of the
running statistics, inference mode on the running statistics, the training-mode forward that keeps
what backward needs (:func:`batch_forward`) and its backward (:func:`batch_backward`), and a layer
kept in inference mode while the network trains (:func:`frozen_forward`, :func:`frozen_backward`).
:mod:`bnstudy.compiled.normkernels` dispatches to them on the kind's code.
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.base.normalisers import GHOST, RENORM


@numba.njit(**JIT)
def new_stats(features):
    """A ``(5, F)`` statistics array: renorm's ``r`` 1 and ``d`` 0 until a batch sets them."""
    st = np.zeros((5, features), np.float32)
    st[3, :] = 1
    return st


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
def batch_parts(kind, n, setting):
    """The (virtual) batches a training batch of ``n`` rows is normalised in: ghost batch norm's
    virtual batches, else 1 (each moves the running statistics once)."""
    return virtual_batches(n, setting) if kind == GHOST else 1


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
def batch_stats(ns, lp, h, start, b, st):
    """Into ``st``: ``mean``, ``var``, ``invstd = 1 / sqrt(var + eps)`` (and renorm's ``r``, ``d``,
    from ``lp``'s running statistics) of rows ``start .. start + b - 1`` of ``h``: one (virtual)
    batch's step."""
    mean, var, invstd = st[0], st[1], st[2]
    batch_moments(h, start, b, mean, var)
    eps = ns.eps
    for f in range(h.shape[1]):
        invstd[f] = np.float32(1) / np.sqrt(var[f] + eps)
    if ns.kind == RENORM:
        renorm_rd(mean, var, lp.running_mean, lp.running_var, eps, ns.rmax, ns.dmax, st[3], st[4])


@numba.njit(**JIT)
def batch_norm_rows(h, start, n, st, lp, renorm, relu, out, out_start, xhat):
    """Normalise rows ``start ..`` of ``h`` with per-feature ``mean``/``invstd`` (rows 0 and 2 of
    ``st``; renorm: its ``r``, ``d``, rows 3 and 4) and ``lp``'s gamma and beta into ``out`` from
    row ``out_start``; ``xhat`` (same rows as ``out``, or a 0-row array) keeps ``xhat``."""
    mean, invstd, r, d = st[0], st[2], st[3], st[4]
    gamma, beta = lp.gamma, lp.beta
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
def running_update(running_mean, running_var, mean, unbiased, factor, one):
    """PyTorch's rule: ``running = (1 - factor) * running + factor * batch``, the variance's
    batch value the unbiased one (``unbiased``, as the caller computes it); any float dtype."""
    keep = one - factor
    for f in range(mean.shape[0]):
        running_mean[f] = keep * running_mean[f] + factor * mean[f]
        running_var[f] = keep * running_var[f] + factor * unbiased[f]


@numba.njit(**JIT)
def running_stats(lp, eps, st):
    """Inference mode's statistics into ``st``: the running mean (row 0) and
    ``invstd = 1 / sqrt(running_var + eps)`` (row 2)."""
    for f in range(lp.running_var.shape[0]):
        st[0, f] = lp.running_mean[f]
        st[2, f] = np.float32(1) / np.sqrt(lp.running_var[f] + eps)


@numba.njit(**JIT)
def batch_inference(lp, eps, h, relu, out):
    """Inference mode: ``invstd = 1 / sqrt(running_var + eps)``,
    ``y = ((h - running_mean) * invstd) * gamma + beta``."""
    n, f_ = h.shape
    st = new_stats(f_)
    running_stats(lp, eps, st)
    none = np.empty((0, f_), np.float32)
    batch_norm_rows(h, 0, n, st, lp, False, relu, out, 0, none)


@numba.njit(**JIT)
def batch_train(ns, lp, h, batch, relu, out):
    """Training mode on consecutive batches of ``batch`` rows (ghost: each in its virtual batches);
    running statistics read (renorm), never written."""
    f_ = h.shape[1]
    none = np.empty((0, f_), np.float32)
    st = np.empty((5, f_), np.float32)
    parts = batch_parts(ns.kind, batch, ns.setting)
    for start in range(0, h.shape[0], batch):
        for v in range(parts):
            lo, rows = virtual_batch(batch, ns.setting, parts, v)
            lo += start
            batch_stats(ns, lp, h, lo, rows, st)
            batch_norm_rows(h, lo, rows, st, lp, ns.kind == RENORM, relu, out, lo, none)


@numba.njit(**JIT)
def batch_forward(ns, lp, h, n, update_count, keep, out, relu=True):
    """Training mode + ReLU (if ``relu``) of rows ``0 .. n-1`` (one batch); keeps ``mean``, ``var``, ``invstd``,
    ``r``, ``d`` (``keep.stats``) and ``keep.xhat`` for backward and moves the running statistics
    once per (virtual) batch, the ``update_count + v``-th update (``momentum < 0``: cumulative
    average). Ghost batch norm keeps virtual batch ``v``'s ``invstd`` in row ``v`` of ``keep.rstd``."""
    kind, st = ns.kind, keep.stats
    f_ = h.shape[1]
    unbiased = np.empty(f_, np.float32)
    parts = batch_parts(kind, n, ns.setting)
    for v in range(parts):
        lo, rows = virtual_batch(n, ns.setting, parts, v)
        batch_stats(ns, lp, h, lo, rows, st)  # r, d: before the update
        if kind == GHOST:
            for f in range(f_):
                keep.rstd[v, f] = st[2, f]
        batch_norm_rows(h, lo, rows, st, lp, kind == RENORM, relu, out, lo, keep.xhat)
        if ns.momentum < 0:  # None: cumulative average
            factor = np.float32(1) / np.float32(update_count + v)
        else:
            factor = ns.momentum
        correction = np.float32(rows) / np.float32(rows - 1)
        var = st[1]
        for f in range(f_):
            unbiased[f] = var[f] * correction
        running_update(lp.running_mean, lp.running_var, st[0], unbiased, factor, np.float32(1))


@numba.njit(**JIT)
def affine_grads(dz, n, xhat, r, d, renorm, dgamma, dbeta):
    """``dgamma = sum(dz * xhat)`` (renorm: ``sum(dz * (xhat * r + d))``), ``dbeta = sum(dz)``, rows in order."""
    f_ = dz.shape[1]
    for f in range(f_):
        dgamma[f] = 0
        dbeta[f] = 0
    for i in range(n):
        for f in range(f_):
            g = dz[i, f]
            dbeta[f] += g
            if renorm:
                dgamma[f] += g * (xhat[i, f] * r[f] + d[f])
            else:
                dgamma[f] += g * xhat[i, f]


@numba.njit(**JIT)
def batch_backward(ns, gamma, keep, dz, n, dh, dgamma, dbeta):
    """Per (virtual) batch of ``B`` rows, per feature, sums over rows in order: ``dxhat = dz * gamma``
    (renorm: ``* r``), ``dh = invstd * (dxhat - sum(dxhat) / B - xhat * (sum(dxhat * xhat) / B))``."""
    kind, setting, xhat, rstd = ns.kind, ns.setting, keep.xhat, keep.rstd
    invstd, r, d = keep.stats[2], keep.stats[3], keep.stats[4]
    f_ = dz.shape[1]
    renorm = kind == RENORM
    affine_grads(dz, n, xhat, r, d, renorm, dgamma, dbeta)
    parts = batch_parts(kind, n, setting)
    sum1 = np.zeros(f_, np.float32)
    sum2 = np.zeros(f_, np.float32)
    for v in range(parts):
        lo, rows = virtual_batch(n, setting, parts, v)
        count = np.float32(rows)
        scale = rstd[v] if kind == GHOST else invstd
        if v > 0:
            for f in range(f_):
                sum1[f] = 0
                sum2[f] = 0
        for i in range(lo, lo + rows):
            for f in range(f_):
                dx = dz[i, f] * gamma[f] * r[f] if renorm else dz[i, f] * gamma[f]
                dh[i, f] = dx
                sum1[f] += dx
                sum2[f] += dx * xhat[i, f]
        for f in range(f_):
            sum1[f] = sum1[f] / count
            sum2[f] = sum2[f] / count
        for i in range(lo, lo + rows):
            for f in range(f_):
                dh[i, f] = scale[f] * (dh[i, f] - sum1[f] - xhat[i, f] * sum2[f])


@numba.njit(**JIT)
def frozen_forward(lp, eps, h, n, keep, out):
    """Rows ``0 .. n-1`` normalised with ``lp``'s running statistics (inference mode), then ReLU;
    keeps ``invstd`` (and the running mean) in ``keep.stats`` and ``xhat`` for
    :func:`frozen_backward`. The running statistics are not written."""
    running_stats(lp, eps, keep.stats)
    batch_norm_rows(h, 0, n, keep.stats, lp, False, True, out, 0, keep.xhat)


@numba.njit(**JIT)
def frozen_backward(gamma, keep, dz, n, dh, dgamma, dbeta):
    """Backward through the constant affine map of :func:`frozen_forward` (ReLU already applied to ``dz``)."""
    invstd, xhat = keep.stats[2], keep.xhat
    f_ = dz.shape[1]
    scale = np.empty(f_, np.float32)
    for f in range(f_):
        dgamma[f] = 0
        dbeta[f] = 0
        scale[f] = gamma[f] * invstd[f]
    for i in range(n):
        for f in range(f_):
            g = dz[i, f]
            dbeta[f] += g
            dgamma[f] += g * xhat[i, f]
            dh[i, f] = g * scale[f]
