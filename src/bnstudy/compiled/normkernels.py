"""Every normaliser's compiled arithmetic, one section per kind, and the dispatch on its code.

A normaliser's arithmetic is written here once (float32, the discipline of
:mod:`bnstudy.compiled.kernels`: no fast-math, no FMA, every reduction in the order
written, vectorised only across independent outputs), and everything that
normalises calls it: evaluation in both modes (:mod:`bnstudy.compiled.kernels`),
training (:mod:`bnstudy.compiled.gradients`, :mod:`bnstudy.compiled.backprop`), the companion
probes (:mod:`bnstudy.compiled.probes`) and the convolutional network
(:mod:`bnstudy.compiled.conv`, :mod:`bnstudy.nets.conv_train`). Each kind has:

- a training-mode forward that keeps what backward needs (and moves the running
  statistics, for the kinds with batch statistics);
- an inference-mode forward;
- a backward: ``dh`` (and ``dgamma``, ``dbeta``) from ``dz``, the gradient at
  the normaliser's output with the ReLU's mask applied;
- the kinds that normalise each row by itself, a function of one row (which is
  what the probes' step computes for them); the kinds with batch statistics,
  the statistics of one (virtual) batch (:func:`batch_stats`, the probes' step).

The dispatch functions at the end (:func:`inference`, :func:`train`,
:func:`forward`, :func:`backward`, :func:`row_forward` and the convolutional
network's :func:`spatial_layer`, :func:`spatial_forward`,
:func:`spatial_backward`) branch on the kind's code (:mod:`bnstudy.base.normalisers`),
an integer argument: one compiled specialisation serves every kind.

Adding a normaliser's arithmetic: a section of its functions, and a branch on its
code in each dispatch function it needs (a kind that normalises each row by
itself needs only :func:`row_forward` and :func:`row_backward`).
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.designs import CONV_POSITIONS as P
from bnstudy.base.fixedmath import JIT
from bnstudy.base.normalisers import BATCH, GHOST, GROUP, LAYER, RENORM, RMS

# Not a normaliser: the code :func:`forward` and :func:`backward` receive for a
# batch-statistics layer kept in inference mode while the network trains (bnstudy.studies.finetune.science).
FROZEN = -1


@numba.njit(**JIT)
def batch_statistics(kind):
    """Whether kind ``kind`` normalises with batch statistics in training mode."""
    return kind == BATCH or kind == RENORM or kind == GHOST


# ---- none: the ReLU alone ------------------------------------------------------------


@numba.njit(**JIT)
def relu_row(h, i, relu, out):
    """Row ``i`` of ``h`` into ``out[i]``, through the ReLU if ``relu``."""
    for f in range(h.shape[1]):
        y = h[i, f]
        out[i, f] = y if (y > 0 or not relu) else np.float32(0)


@numba.njit(**JIT)
def identity_backward(dz, n, dh):
    for i in range(n):
        for f in range(dz.shape[1]):
            dh[i, f] = dz[i, f]


# ---- batch norm, batch renorm, ghost batch norm: batch statistics ----------------------


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
def batch_stats(kind, h, start, b, running_mean, running_var, eps, rmax, dmax, mean, var, invstd, r, d):
    """``mean``, ``var``, ``invstd = 1 / sqrt(var + eps)`` (and renorm's ``r``, ``d``, from the
    running statistics) of rows ``start .. start + b - 1`` of ``h``: one (virtual) batch's step."""
    batch_moments(h, start, b, mean, var)
    for f in range(h.shape[1]):
        invstd[f] = np.float32(1) / np.sqrt(var[f] + eps)
    if kind == RENORM:
        renorm_rd(mean, var, running_mean, running_var, eps, rmax, dmax, r, d)


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
def running_update(running_mean, running_var, mean, unbiased, factor, one):
    """PyTorch's rule: ``running = (1 - factor) * running + factor * batch``, the variance's
    batch value the unbiased one (``unbiased``, as the caller computes it); any float dtype."""
    keep = one - factor
    for f in range(mean.shape[0]):
        running_mean[f] = keep * running_mean[f] + factor * mean[f]
        running_var[f] = keep * running_var[f] + factor * unbiased[f]


@numba.njit(**JIT)
def batch_inference(h, gamma, beta, running_mean, running_var, eps, relu, out):
    """Inference mode: ``invstd = 1 / sqrt(running_var + eps)``,
    ``y = ((h - running_mean) * invstd) * gamma + beta``."""
    n, f_ = h.shape
    invstd = np.empty(f_, np.float32)
    for f in range(f_):
        invstd[f] = np.float32(1) / np.sqrt(running_var[f] + eps)
    none = np.empty((0, f_), np.float32)
    batch_norm_rows(h, 0, n, running_mean, invstd, gamma, beta, invstd, invstd, False, relu, out, 0, none)


@numba.njit(**JIT)
def batch_train(kind, h, batch, gamma, beta, running_mean, running_var, eps, setting, rmax, dmax, relu, out):
    """Training mode on consecutive batches of ``batch`` rows (ghost: each in its virtual batches);
    running statistics read (renorm), never written."""
    f_ = h.shape[1]
    none = np.empty((0, f_), np.float32)
    mean = np.empty(f_, np.float32)
    var = np.empty(f_, np.float32)
    invstd = np.empty(f_, np.float32)
    r = np.empty(f_, np.float32)
    d = np.empty(f_, np.float32)
    parts = batch_parts(kind, batch, setting)
    for start in range(0, h.shape[0], batch):
        for v in range(parts):
            lo, rows = virtual_batch(batch, setting, parts, v)
            lo += start
            batch_stats(kind, h, lo, rows, running_mean, running_var, eps, rmax, dmax, mean, var, invstd, r, d)
            batch_norm_rows(h, lo, rows, mean, invstd, gamma, beta, r, d, kind == RENORM, relu, out, lo, none)


@numba.njit(**JIT)
def batch_forward(
    kind,
    h,
    n,
    gamma,
    beta,
    rm,
    rv,
    eps,
    setting,
    momentum,
    update_count,
    rmax,
    dmax,
    mean,
    var,
    invstd,
    r,
    d,
    out,
    xhat,
    rstd,
):
    """Training mode + ReLU of rows ``0 .. n-1`` (one batch); keeps ``mean``, ``var``, ``invstd``,
    ``r``, ``d`` and ``xhat`` for backward and moves the running statistics once per (virtual) batch,
    the ``update_count + v``-th update (``momentum < 0``: cumulative average). Ghost batch norm
    keeps virtual batch ``v``'s ``invstd`` in row ``v`` of ``rstd``."""
    f_ = h.shape[1]
    unbiased = np.empty(f_, np.float32)
    parts = batch_parts(kind, n, setting)
    for v in range(parts):
        lo, rows = virtual_batch(n, setting, parts, v)
        batch_stats(kind, h, lo, rows, rm, rv, eps, rmax, dmax, mean, var, invstd, r, d)  # r, d: before the update
        if kind == GHOST:
            for f in range(f_):
                rstd[v, f] = invstd[f]
        batch_norm_rows(h, lo, rows, mean, invstd, gamma, beta, r, d, kind == RENORM, True, out, lo, xhat)
        if momentum < 0:  # None: cumulative average
            factor = np.float32(1) / np.float32(update_count + v)
        else:
            factor = momentum
        correction = np.float32(rows) / np.float32(rows - 1)
        for f in range(f_):
            unbiased[f] = var[f] * correction
        running_update(rm, rv, mean, unbiased, factor, np.float32(1))


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
def batch_backward(kind, dz, n, gamma, invstd, r, d, xhat, rstd, setting, dh, dgamma, dbeta):
    """Per (virtual) batch of ``B`` rows, per feature, sums over rows in order: ``dxhat = dz * gamma``
    (renorm: ``* r``), ``dh = invstd * (dxhat - sum(dxhat) / B - xhat * (sum(dxhat * xhat) / B))``."""
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
def frozen_forward(h, n, gamma, beta, rm, rv, eps, invstd, out, xhat):
    """Rows ``0 .. n-1`` normalised with the running statistics ``rm``/``rv`` (inference mode),
    then ReLU; keeps ``invstd`` and ``xhat`` for :func:`frozen_backward`. ``rm``/``rv`` are not written."""
    for f in range(h.shape[1]):
        invstd[f] = np.float32(1) / np.sqrt(rv[f] + eps)
    batch_norm_rows(h, 0, n, rm, invstd, gamma, beta, invstd, invstd, False, True, out, 0, xhat)


@numba.njit(**JIT)
def frozen_backward(dz, n, gamma, invstd, xhat, dh, dgamma, dbeta):
    """Backward through the constant affine map of :func:`frozen_forward` (ReLU already applied to ``dz``)."""
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


# ---- layer norm, group norm: per example and group of consecutive features --------------
# An example is one row of the MLP (positions = 1) or the P rows of one image of the
# convolutional network (its positions): the statistics of a group are over its features
# (channels) at every position, positions in order and within a position features in order.


@numba.njit(**JIT)
def group_norm_example(h, n, positions, groups, eps, gamma, beta, relu, out, xhat, rstd):
    """Group norm (layer norm: ``groups = 1``) of example ``n`` (rows ``n * positions ..``) of ``h``
    into ``out``; keeps ``xhat`` and ``rstd[n, g]`` when those arrays have rows (pass 0-row arrays
    otherwise)."""
    size = h.shape[1] // groups
    count = np.float32(size * positions)
    keep = xhat.shape[0] > 0
    base = n * positions
    for g in range(groups):
        lo = g * size
        mean = np.float32(0)
        for p in range(base, base + positions):
            for f in range(lo, lo + size):
                mean += h[p, f]
        mean = mean / count
        var = np.float32(0)
        for p in range(base, base + positions):
            for f in range(lo, lo + size):
                dev = h[p, f] - mean
                var += dev * dev
        var = var / count
        inv = np.float32(1) / np.sqrt(var + eps)
        if keep:
            rstd[n, g] = inv
        for p in range(base, base + positions):
            for f in range(lo, lo + size):
                xh = (h[p, f] - mean) * inv
                if keep:
                    xhat[p, f] = xh
                y = xh * gamma[f] + beta[f]
                if relu and not y > 0:
                    y = np.float32(0)
                out[p, f] = y


@numba.njit(**JIT)
def group_norm_example_backward(dz, n, positions, groups, gamma, xhat, rstd, dh):
    """``dh`` of example ``n`` per group, sums over the group's values in the forward's order:
    ``dh = invstd * (dxhat - sum(dxhat) / count - xhat * (sum(dxhat * xhat) / count))``."""
    size = dz.shape[1] // groups
    count = np.float32(size * positions)
    base = n * positions
    for g in range(groups):
        lo = g * size
        s1 = np.float32(0)
        s2 = np.float32(0)
        for p in range(base, base + positions):
            for f in range(lo, lo + size):
                dx = dz[p, f] * gamma[f]
                dh[p, f] = dx
                s1 += dx
                s2 += dx * xhat[p, f]
        s1 = s1 / count
        s2 = s2 / count
        inv = rstd[n, g]
        for p in range(base, base + positions):
            for f in range(lo, lo + size):
                dh[p, f] = inv * (dh[p, f] - s1 - xhat[p, f] * s2)


@numba.njit(**JIT)
def row_norm(h, i, groups, eps, gamma, beta, relu, out, xhat, rstd):
    """Layer/group norm of row ``i`` of ``h`` into ``out[i]`` (the MLP: an example is a row)."""
    group_norm_example(h, i, 1, groups, eps, gamma, beta, relu, out, xhat, rstd)


@numba.njit(**JIT)
def spatial_norm(h, n_ex, groups, eps, gamma, beta, relu, out, xhat, rstd):
    """Layer/group norm of each of the ``n_ex`` images (``P`` rows each) of ``h`` into ``out``."""
    for n in range(n_ex):
        group_norm_example(h, n, P, groups, eps, gamma, beta, relu, out, xhat, rstd)


@numba.njit(**JIT)
def spatial_norm_backward(dz, n_ex, groups, gamma, xhat, rstd, dh, dgamma, dbeta):
    """Backward of :func:`spatial_norm` (``dz``: the gradient at its output, ReLU mask applied);
    ``dgamma``/``dbeta`` summed over all rows in order."""
    affine_grads(dz, n_ex * P, xhat, gamma, gamma, False, dgamma, dbeta)
    for n in range(n_ex):
        group_norm_example_backward(dz, n, P, groups, gamma, xhat, rstd, dh)


# ---- RMS norm (Zhang & Sennrich 2019): per row, no centring, gamma and no beta ------------


@numba.njit(**JIT)
def rms_row(h, i, eps, gamma, relu, out, xhat, rstd):
    """Row ``i``: ``ms = (sum of h**2 in feature order) / F``, ``invrms = 1 / sqrt(ms + eps)``,
    ``xhat = h * invrms``, ``y = xhat * gamma``; keeps ``xhat[i]`` and ``rstd[i, 0]`` when those
    arrays have rows."""
    f_ = h.shape[1]
    ms = np.float32(0)
    for f in range(f_):
        ms += h[i, f] * h[i, f]
    ms = ms / np.float32(f_)
    inv = np.float32(1) / np.sqrt(ms + eps)
    keep = xhat.shape[0] > 0
    if keep:
        rstd[i, 0] = inv
    for f in range(f_):
        xh = h[i, f] * inv
        if keep:
            xhat[i, f] = xh
        y = xh * gamma[f]
        if relu and not y > 0:
            y = np.float32(0)
        out[i, f] = y


@numba.njit(**JIT)
def rms_row_backward(dz, i, gamma, xhat, rstd, dh):
    """``dh[i] = invrms * (dxhat - xhat * (sum(dxhat * xhat) / F))``, ``dxhat = dz * gamma``,
    the sum in feature order."""
    f_ = dz.shape[1]
    s = np.float32(0)
    for f in range(f_):
        dx = dz[i, f] * gamma[f]
        dh[i, f] = dx
        s += dx * xhat[i, f]
    s = s / np.float32(f_)
    inv = rstd[i, 0]
    for f in range(f_):
        dh[i, f] = inv * (dh[i, f] - xhat[i, f] * s)


# ---- dispatch on the kind's code -------------------------------------------------------


@numba.njit(**JIT)
def row_forward(kind, h, i, setting, eps, gamma, beta, relu, out, xhat, rstd):
    """A kind that normalises each row by itself, on row ``i`` (then ReLU if ``relu``): its
    forward in both modes; keeps ``xhat[i]`` and ``rstd[i]`` when those arrays have rows."""
    if kind == LAYER or kind == GROUP:
        row_norm(h, i, setting, eps, gamma, beta, relu, out, xhat, rstd)
    elif kind == RMS:
        rms_row(h, i, eps, gamma, relu, out, xhat, rstd)
    else:
        relu_row(h, i, relu, out)


@numba.njit(**JIT)
def row_backward(kind, dz, n, gamma, xhat, rstd, setting, dh, dgamma, dbeta):
    """Backward of :func:`row_forward` over rows ``0 .. n-1``; ``dgamma``/``dbeta`` summed over rows
    (none: no gamma or beta, both left untouched)."""
    if kind == LAYER or kind == GROUP:
        affine_grads(dz, n, xhat, gamma, gamma, False, dgamma, dbeta)
        for i in range(n):
            group_norm_example_backward(dz, i, 1, setting, gamma, xhat, rstd, dh)
    elif kind == RMS:  # no beta: its slot's gradient stays zero
        affine_grads(dz, n, xhat, gamma, gamma, False, dgamma, dbeta)
        for f in range(dz.shape[1]):
            dbeta[f] = 0
        for i in range(n):
            rms_row_backward(dz, i, gamma, xhat, rstd, dh)
    else:
        identity_backward(dz, n, dh)


@numba.njit(**JIT)
def inference(kind, h, gamma, beta, running_mean, running_var, eps, setting, relu, out):
    """Inference-mode normaliser (and ReLU) of every row of ``h`` into ``out``."""
    if batch_statistics(kind):
        batch_inference(h, gamma, beta, running_mean, running_var, eps, relu, out)
    else:
        none = np.empty((0, h.shape[1]), np.float32)
        for i in range(h.shape[0]):
            row_forward(kind, h, i, setting, eps, gamma, beta, relu, out, none, none)


@numba.njit(**JIT)
def train(kind, h, batch, gamma, beta, running_mean, running_var, eps, setting, rmax, dmax, relu, out):
    """Training-mode normaliser (and ReLU) of ``h``, whose rows are consecutive batches of
    ``batch`` rows; running statistics are read (batch renorm), never written."""
    if batch_statistics(kind):
        batch_train(kind, h, batch, gamma, beta, running_mean, running_var, eps, setting, rmax, dmax, relu, out)
    else:
        inference(kind, h, gamma, beta, running_mean, running_var, eps, setting, relu, out)


@numba.njit(**JIT)
def forward(
    kind,
    h,
    n,
    gamma,
    beta,
    rm,
    rv,
    eps,
    setting,
    momentum,
    update_count,
    rmax,
    dmax,
    mean,
    var,
    invstd,
    r,
    d,
    out,
    xhat,
    rstd,
):
    """Training-mode normaliser + ReLU of rows ``0 .. n-1`` (one batch), keeping what
    :func:`backward` needs (``mean``, ``var``, ``invstd``, ``r``, ``d``, ``xhat``, ``rstd``), the
    running statistics moved (batch statistics; :data:`FROZEN`: inference mode, not moved).

    Ghost batch norm: each virtual batch in turn (``setting`` rows, the last to the end) is
    normalised and then moves the running statistics, as the ``update_count + v``-th update;
    its ``invstd`` goes to row ``v`` of ``rstd``.
    """
    if kind == FROZEN:
        frozen_forward(h, n, gamma, beta, rm, rv, eps, invstd, out, xhat)
    elif batch_statistics(kind):
        batch_forward(
            kind, h, n, gamma, beta, rm, rv, eps, setting, momentum, update_count, rmax, dmax,
            mean, var, invstd, r, d, out, xhat, rstd,
        )  # fmt: skip
    else:
        for i in range(n):
            row_forward(kind, h, i, setting, eps, gamma, beta, True, out, xhat, rstd)


@numba.njit(**JIT)
def backward(kind, dz, n, gamma, invstd, r, d, xhat, rstd, setting, dh, dgamma, dbeta):
    """``dh`` (and ``dgamma``, ``dbeta``) from ``dz``, the gradient at the normaliser's output with
    the ReLU's mask applied, after :func:`forward` of the same rows."""
    if kind == FROZEN:
        frozen_backward(dz, n, gamma, invstd, xhat, dh, dgamma, dbeta)
    elif batch_statistics(kind):
        batch_backward(kind, dz, n, gamma, invstd, r, d, xhat, rstd, setting, dh, dgamma, dbeta)
    else:
        row_backward(kind, dz, n, gamma, xhat, rstd, setting, dh, dgamma, dbeta)


@numba.njit(**JIT)
def rstd_scratch(kind, n, setting, features):
    """The ``rstd`` array :func:`forward` fills for batches of up to ``n`` rows: ghost batch norm's
    ``invstd`` of each virtual batch, else the ``invstd`` of each row and group."""
    if kind == GHOST:
        return np.empty((virtual_batches(n, setting), features), np.float32)
    return np.empty((n, setting), np.float32)


@numba.njit(**JIT)
def spatial_layer(kind, h, n_ex, batch, train_mode, gamma, beta, rm, rv, eps, setting, out):
    """The convolutional network's normaliser + ReLU of ``n_ex`` examples' rows (``P`` each):
    training mode on consecutive batches of ``batch`` examples, or inference mode; running
    statistics never written."""
    if kind == LAYER or kind == GROUP:
        none = np.empty((0, h.shape[1]), np.float32)
        rstd = np.empty((0, setting), np.float32)
        spatial_norm(h, n_ex, setting, eps, gamma, beta, True, out, none, rstd)
    elif train_mode and batch_statistics(kind):
        train(kind, h, batch * P, gamma, beta, rm, rv, eps, 1, np.float32(1), np.float32(0), True, out)
    else:
        inference(kind, h, gamma, beta, rm, rv, eps, 1, True, out)


@numba.njit(**JIT)
def spatial_forward(kind, h, n_ex, gamma, beta, rm, rv, eps, setting, momentum, st, out, xhat, rstd):
    """The convolutional network's training-mode normaliser + ReLU (statistics of a batch norm over
    the batch's examples x positions, one running update per step)."""
    if kind == LAYER or kind == GROUP:
        spatial_norm(h, n_ex, setting, eps, gamma, beta, True, out, xhat, rstd)
    else:
        forward(
            kind, h, n_ex * P, gamma, beta, rm, rv, eps, 1, momentum, 1, np.float32(1), np.float32(0),
            st[0], st[1], st[2], st[3], st[4], out, xhat, rstd,
        )  # fmt: skip


@numba.njit(**JIT)
def spatial_backward(kind, dz, n_ex, gamma, st, xhat, rstd, setting, dh, dgamma, dbeta):
    """Backward of :func:`spatial_forward`."""
    if kind == LAYER or kind == GROUP:
        spatial_norm_backward(dz, n_ex, setting, gamma, xhat, rstd, dh, dgamma, dbeta)
    else:
        backward(kind, dz, n_ex * P, gamma, st[2], st[3], st[4], xhat, rstd, setting, dh, dgamma, dbeta)
