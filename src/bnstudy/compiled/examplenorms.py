"""The compiled arithmetic of the normalisers with per-example statistics: layer norm, group norm, RMS norm.

One section of :mod:`bnstudy.compiled.normkernels`' arithmetic, in its discipline (float32, no
fast-math, no FMA, every reduction in the order written): layer and group norm over an example's
groups of consecutive features (an MLP row, or the rows of one image of the convolutional network,
:func:`spatial_norm`), RMS norm per row (no centring, gamma and no beta), each with its backward.
:mod:`bnstudy.compiled.normkernels` dispatches to them on the kind's code.
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.batchstats import affine_grads

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
