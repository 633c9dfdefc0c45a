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
an integer argument: one compiled specialisation serves every kind. The
convolutional network has none, batch norm, batch renorm, ghost batch norm (their
batch-statistics arithmetic on the rows of examples x positions: its virtual batch
of ``setting`` examples is ``setting * positions`` rows, :func:`spatial_settings`),
layer and group norm (per example over its channels x positions).

Adding a normaliser's arithmetic: a section of its functions, and a branch on its
code in each dispatch function it needs (a kind that normalises each row by
itself needs only :func:`row_forward` and :func:`row_backward`).
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.base.normalisers import BATCH, GHOST, GROUP, LAYER, RENORM, RMS

# Not a normaliser: the code :func:`forward` and :func:`backward` receive for a
# batch-statistics layer kept in inference mode while the network trains (bnstudy.studies.finetune.science).
FROZEN = -1

# ---- the records the kernels take ---------------------------------------------------------
# A normaliser layer is data: its settings (one record for the network) and its arrays (one
# record per layer), so that no kernel takes one argument per number or per tensor.

Settings = namedtuple("Settings", "kind eps setting momentum rmax dmax")
Settings.__doc__ = """A normaliser's settings: its code (:mod:`bnstudy.base.normalisers`), ``eps`` (float32), its
integer ``setting`` (group norm's groups, ghost batch norm's rows per virtual batch, else 1), the
running statistics' ``momentum`` (float32; < 0: None, the cumulative average) and batch renorm's
limits ``rmax``, ``dmax`` (float32; 1 and 0 for every other kind)."""

Params = namedtuple("Params", "gamma beta running_mean running_var")
Params.__doc__ = """One normaliser layer's arrays, ``(F,)`` float32 each (defaults where a kind has none)."""

Keep = namedtuple("Keep", "stats xhat rstd")
Keep.__doc__ = """What a training-mode forward keeps for backward: ``stats`` ``(5, F)`` (rows: mean, var,
invstd, renorm's r and d), ``xhat`` (a row per input row) and ``rstd`` (:func:`rstd_scratch`)."""


def settings(kind, eps, setting=1, momentum=-1.0, rmax=1.0, dmax=0.0) -> Settings:
    """A :class:`Settings` record with the kernels' types (integers int64, the rest float32)."""
    f32 = np.float32
    return Settings(int(kind), f32(eps), int(setting), f32(momentum), f32(rmax), f32(dmax))


@numba.njit(**JIT)
def with_limits(ns, kind, setting, rmax, dmax):
    """``ns`` with another kind, setting and renorm limits (eps and momentum kept)."""
    return Settings(kind, ns.eps, setting, ns.momentum, rmax, dmax)


@numba.njit(**JIT)
def new_stats(features):
    """A ``(5, F)`` statistics array: renorm's ``r`` 1 and ``d`` 0 until a batch sets them."""
    st = np.zeros((5, features), np.float32)
    st[3, :] = 1
    return st


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
def spatial_norm(h, n_ex, positions, groups, eps, gamma, beta, relu, out, xhat, rstd):
    """Layer/group norm of each of the ``n_ex`` images (``positions`` rows each) of ``h`` into ``out``."""
    for n in range(n_ex):
        group_norm_example(h, n, positions, groups, eps, gamma, beta, relu, out, xhat, rstd)


@numba.njit(**JIT)
def spatial_norm_backward(dz, n_ex, positions, groups, gamma, xhat, rstd, dh, dgamma, dbeta):
    """Backward of :func:`spatial_norm` (``dz``: the gradient at its output, ReLU mask applied);
    ``dgamma``/``dbeta`` summed over all rows in order."""
    affine_grads(dz, n_ex * positions, xhat, gamma, gamma, False, dgamma, dbeta)
    for n in range(n_ex):
        group_norm_example_backward(dz, n, positions, groups, gamma, xhat, rstd, dh)


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
def row_forward(ns, lp, h, i, relu, out, xhat, rstd):
    """A kind that normalises each row by itself, on row ``i`` (then ReLU if ``relu``): its
    forward in both modes; keeps ``xhat[i]`` and ``rstd[i]`` when those arrays have rows."""
    kind = ns.kind
    if kind == LAYER or kind == GROUP:
        row_norm(h, i, ns.setting, ns.eps, lp.gamma, lp.beta, relu, out, xhat, rstd)
    elif kind == RMS:
        rms_row(h, i, ns.eps, lp.gamma, relu, out, xhat, rstd)
    else:
        relu_row(h, i, relu, out)


@numba.njit(**JIT)
def row_backward(ns, gamma, keep, dz, n, dh, dgamma, dbeta):
    """Backward of :func:`row_forward` over rows ``0 .. n-1``; ``dgamma``/``dbeta`` summed over rows
    (none: no gamma or beta, both left untouched)."""
    kind, xhat, rstd = ns.kind, keep.xhat, keep.rstd
    if kind == LAYER or kind == GROUP:
        affine_grads(dz, n, xhat, gamma, gamma, False, dgamma, dbeta)
        for i in range(n):
            group_norm_example_backward(dz, i, 1, ns.setting, gamma, xhat, rstd, dh)
    elif kind == RMS:  # no beta: its slot's gradient stays zero
        affine_grads(dz, n, xhat, gamma, gamma, False, dgamma, dbeta)
        for f in range(dz.shape[1]):
            dbeta[f] = 0
        for i in range(n):
            rms_row_backward(dz, i, gamma, xhat, rstd, dh)
    else:
        identity_backward(dz, n, dh)


@numba.njit(**JIT)
def inference(ns, lp, h, relu, out):
    """Inference-mode normaliser (and ReLU) of every row of ``h`` into ``out``."""
    if batch_statistics(ns.kind):
        batch_inference(lp, ns.eps, h, relu, out)
    else:
        none = np.empty((0, h.shape[1]), np.float32)
        for i in range(h.shape[0]):
            row_forward(ns, lp, h, i, relu, out, none, none)


@numba.njit(**JIT)
def train(ns, lp, h, batch, relu, out):
    """Training-mode normaliser (and ReLU) of ``h``, whose rows are consecutive batches of
    ``batch`` rows; running statistics are read (batch renorm), never written."""
    if batch_statistics(ns.kind):
        batch_train(ns, lp, h, batch, relu, out)
    else:
        inference(ns, lp, h, relu, out)


@numba.njit(**JIT)
def forward(ns, lp, h, n, update_count, keep, out):
    """Training-mode normaliser + ReLU of rows ``0 .. n-1`` (one batch), keeping what
    :func:`backward` needs in ``keep`` (``mean``, ``var``, ``invstd``, ``r``, ``d``, ``xhat``,
    ``rstd``), the running statistics moved (batch statistics; :data:`FROZEN`: inference mode,
    not moved).

    Ghost batch norm: each virtual batch in turn (``setting`` rows, the last to the end) is
    normalised and then moves the running statistics, as the ``update_count + v``-th update;
    its ``invstd`` goes to row ``v`` of ``keep.rstd``.
    """
    if ns.kind == FROZEN:
        frozen_forward(lp, ns.eps, h, n, keep, out)
    elif batch_statistics(ns.kind):
        batch_forward(ns, lp, h, n, update_count, keep, out)
    else:
        for i in range(n):
            row_forward(ns, lp, h, i, True, out, keep.xhat, keep.rstd)


@numba.njit(**JIT)
def backward(ns, gamma, keep, dz, n, dh, dgamma, dbeta):
    """``dh`` (and ``dgamma``, ``dbeta``) from ``dz``, the gradient at the normaliser's output with
    the ReLU's mask applied, after :func:`forward` of the same rows."""
    if ns.kind == FROZEN:
        frozen_backward(gamma, keep, dz, n, dh, dgamma, dbeta)
    elif batch_statistics(ns.kind):
        batch_backward(ns, gamma, keep, dz, n, dh, dgamma, dbeta)
    else:
        row_backward(ns, gamma, keep, dz, n, dh, dgamma, dbeta)


@numba.njit(**JIT)
def rstd_scratch(kind, n, setting, features):
    """The ``rstd`` array :func:`forward` fills for batches of up to ``n`` rows: ghost batch norm's
    ``invstd`` of each virtual batch, else the ``invstd`` of each row and group."""
    if kind == GHOST:
        return np.empty((virtual_batches(n, setting), features), np.float32)
    return np.empty((n, setting), np.float32)


@numba.njit(**JIT)
def spatial_settings(ns, positions):
    """A batch-statistics kind's settings over the rows of examples of ``positions`` rows each (the
    convolutional network): ghost batch norm's virtual batch of ``setting`` examples becomes
    ``setting * positions`` rows (its examples x positions), batch renorm keeps ``ns``'s limits,
    batch norm gets setting 1 and limits ``(1, 0)``."""
    kind = ns.kind
    if kind == GHOST:
        return with_limits(ns, kind, ns.setting * positions, np.float32(1), np.float32(0))
    if kind == RENORM:
        return with_limits(ns, kind, 1, ns.rmax, ns.dmax)
    return with_limits(ns, kind, 1, np.float32(1), np.float32(0))


@numba.njit(**JIT)
def spatial_layer(ns, lp, h, n_ex, positions, batch, train_mode, relu, out):
    """The convolutional network's normaliser (+ ReLU if ``relu``) of ``n_ex`` examples' rows
    (``positions`` each): training mode on consecutive batches of ``batch`` examples (batch renorm
    with ``ns``'s limits, ghost batch norm in virtual batches of ``ns.setting`` examples), or
    inference mode; running statistics never written."""
    kind = ns.kind
    if kind == LAYER or kind == GROUP:
        none = np.empty((0, h.shape[1]), np.float32)
        rstd = np.empty((0, ns.setting), np.float32)
        spatial_norm(h, n_ex, positions, ns.setting, ns.eps, lp.gamma, lp.beta, relu, out, none, rstd)
    elif train_mode and batch_statistics(kind):
        train(spatial_settings(ns, positions), lp, h, batch * positions, relu, out)
    else:
        inference(with_limits(ns, kind, 1, np.float32(1), np.float32(0)), lp, h, relu, out)


@numba.njit(**JIT)
def spatial_forward(ns, lp, h, n_ex, positions, updates, keep, relu, out):
    """The convolutional network's training-mode normaliser + ReLU (if ``relu``) of one batch of
    ``n_ex`` examples: the batch-statistics kinds over the batch's examples x positions
    (:func:`spatial_settings`: ghost batch norm per virtual batch of ``ns.setting`` examples, batch
    renorm with ``ns``'s limits), moving the running statistics once per (virtual) batch as the
    ``updates + v``-th update; layer and group norm per example."""
    kind = ns.kind
    rows = n_ex * positions
    if kind == LAYER or kind == GROUP:
        spatial_norm(h, n_ex, positions, ns.setting, ns.eps, lp.gamma, lp.beta, relu, out, keep.xhat, keep.rstd)
    elif batch_statistics(kind):
        batch_forward(spatial_settings(ns, positions), lp, h, rows, updates, keep, out, relu)
    elif kind == FROZEN:
        running_stats(lp, ns.eps, keep.stats)
        batch_norm_rows(h, 0, rows, keep.stats, lp, False, relu, out, 0, keep.xhat)
    else:
        for i in range(rows):
            relu_row(h, i, relu, out)


@numba.njit(**JIT)
def spatial_backward(ns, gamma, keep, dz, n_ex, positions, dh, dgamma, dbeta):
    """Backward of :func:`spatial_forward` (``dz``: the gradient at its output, ReLU mask applied)."""
    if ns.kind == LAYER or ns.kind == GROUP:
        spatial_norm_backward(dz, n_ex, positions, ns.setting, gamma, keep.xhat, keep.rstd, dh, dgamma, dbeta)
    elif batch_statistics(ns.kind):
        backward(spatial_settings(ns, positions), gamma, keep, dz, n_ex * positions, dh, dgamma, dbeta)
    else:
        backward(ns, gamma, keep, dz, n_ex * positions, dh, dgamma, dbeta)
