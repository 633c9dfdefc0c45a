"""One layer's training-mode forward pass with what backward needs, and the backward passes, compiled.

The pieces :func:`bnstudy.backprop.train_run` chains into a training step. The
forward arithmetic is :mod:`bnstudy.kernels`' (training mode); everything here is
float32 in the same discipline (no fast-math, no FMA, every reduction in the
order stated, vectorised only across independent outputs), except the loss,
computed in float64 with :mod:`bnstudy.fixedmath`'s ``exp``/``log``.

With ``B`` rows in the batch and ``D = d loss / d logits``:

- loss (:func:`loss_and_grad`): per row ``log(sum_c exp(z_c - max)) + max - z_y``
  (classes in order), the batch loss their mean over rows (row order);
  ``D = (softmax - onehot) / B`` in float64, rounded to float32;
- Linear ``h = a W^T + b`` (:func:`linear_backward`):
  ``dW[o, :] = sum_rows dh[r, o] * a[r, :]`` and ``db[o] = sum_rows dh[r, o]``
  (rows in order, from zero); ``da[r, :] = sum_o dh[r, o] * W[o, :]`` (outputs in
  order, from zero);
- ReLU: the gradient passes where the ReLU's output is positive;
- batch norm (:func:`norm_backward`; per feature, sums over rows in order):
  ``dxhat = dz * gamma`` (renorm: ``dz * gamma * r``),
  ``dh = invstd * (dxhat - sum(dxhat) / B - xhat * (sum(dxhat * xhat) / B))``,
  ``dgamma = sum(dz * xhat)`` (renorm: ``sum(dz * (xhat * r + d))``),
  ``dbeta = sum(dz)``; ``r`` and ``d`` are constants (Ioffe 2017);
- ghost batch norm: batch norm's formula within each virtual batch (``B`` its
  rows), virtual batches in order; ``dgamma``/``dbeta`` summed over all rows;
- layer and group norm (per row and group, sums over features in order): the same
  formula with the group's statistics; ``dgamma``/``dbeta`` summed over rows;
- running statistics (batch norms; :func:`norm_forward`, after the layer's
  forward pass), PyTorch's rule: ``running = (1 - f) * running + f * batch`` with
  the unbiased batch variance ``var * B / (B - 1)``; ``f`` is the momentum, or
  ``1 / t`` at the ``t``-th update when the momentum is None (cumulative average).
  Ghost batch norm updates once per virtual batch, in order, each an update of its own.
- a batch-statistics layer kept in inference mode while the rest trains (code
  :data:`FROZEN`, :func:`frozen_forward` and :func:`frozen_backward`; fine-tuning
  with the statistics frozen): ``invstd = 1 / sqrt(running_var + eps)``,
  ``xhat = (h - running_mean) * invstd``, ``y = xhat * gamma + beta``, the
  inference-mode arithmetic of :mod:`bnstudy.kernels` bit for bit; the running
  statistics are read, never written. Backward through this constant affine map:
  ``dh = dz * (gamma * invstd)``, ``dgamma = sum(dz * xhat)``, ``dbeta = sum(dz)``
  (sums over rows in order).
"""

from __future__ import annotations

import numba
import numpy as np

from .blocks import (
    batch_moments,
    batch_norm_rows,
    batch_statistics,
    renorm_rd,
    row_norm,
    virtual_batch,
    virtual_batches,
)
from .fixedmath import JIT, exp, log
from .normalisers import GHOST, GROUP, LAYER, NONE, RENORM

# Not a normaliser: the code :func:`norm_forward` and :func:`norm_backward` receive for a
# batch-statistics layer kept in inference mode while the network trains (bnstudy.finetune).
FROZEN = -1


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


@numba.njit(**JIT)
def norm_forward(
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
    """Training-mode normaliser + ReLU of rows ``0 .. n-1``; saves what backward needs and
    moves the running statistics (batch norms).

    Ghost batch norm: each virtual batch in turn (``setting`` rows, the last to the
    end) is normalised and then moves the running statistics, as the
    ``update_count + v``-th update; its ``invstd`` goes to row ``v`` of ``rstd``.
    """
    f_ = h.shape[1]
    if kind == FROZEN:
        frozen_forward(h, n, gamma, beta, rm, rv, eps, invstd, out, xhat)
    elif batch_statistics(kind):
        parts = virtual_batches(n, setting) if kind == GHOST else 1
        for v in range(parts):
            lo, rows = virtual_batch(n, setting, parts, v)
            batch_moments(h, lo, rows, mean, var)
            for f in range(f_):
                invstd[f] = np.float32(1) / np.sqrt(var[f] + eps)
            if kind == GHOST:
                for f in range(f_):
                    rstd[v, f] = invstd[f]
            if kind == RENORM:  # from the running statistics before this step's update
                renorm_rd(mean, var, rm, rv, eps, rmax, dmax, r, d)
            batch_norm_rows(h, lo, rows, mean, invstd, gamma, beta, r, d, kind == RENORM, True, out, lo, xhat)
            if momentum < 0:  # None: cumulative average
                factor = np.float32(1) / np.float32(update_count + v)
            else:
                factor = momentum
            keep = np.float32(1) - factor
            correction = np.float32(rows) / np.float32(rows - 1)
            for f in range(f_):
                rm[f] = keep * rm[f] + factor * mean[f]
                rv[f] = keep * rv[f] + factor * (var[f] * correction)
    elif kind == LAYER or kind == GROUP:
        for i in range(n):
            row_norm(h, i, setting, eps, gamma, beta, True, out, xhat, rstd)
    else:
        for i in range(n):
            for f in range(f_):
                y = h[i, f]
                out[i, f] = y if y > 0 else np.float32(0)


@numba.njit(**JIT)
def norm_backward(kind, dz, n, gamma, invstd, r, d, xhat, rstd, setting, dh, dgamma, dbeta):
    """``dh`` from ``dz`` (the gradient at the normaliser's output, ReLU already applied).

    Ghost batch norm: batch norm's formula within each virtual batch (its rows, its
    ``invstd`` from row ``v`` of ``rstd``), virtual batches in order.
    """
    f_ = dz.shape[1]
    if kind == NONE:
        for i in range(n):
            for f in range(f_):
                dh[i, f] = dz[i, f]
        return
    if kind == FROZEN:
        frozen_backward(dz, n, gamma, invstd, xhat, dh, dgamma, dbeta)
        return
    for f in range(f_):
        dgamma[f] = 0
        dbeta[f] = 0
    renorm = kind == RENORM
    for i in range(n):
        for f in range(f_):
            g = dz[i, f]
            dbeta[f] += g
            if renorm:
                dgamma[f] += g * (xhat[i, f] * r[f] + d[f])
            else:
                dgamma[f] += g * xhat[i, f]
    if batch_statistics(kind):
        parts = virtual_batches(n, setting) if kind == GHOST else 1
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
    else:
        groups = setting
        size = f_ // groups
        count = np.float32(size)
        for i in range(n):
            for g in range(groups):
                lo = g * size
                s1 = np.float32(0)
                s2 = np.float32(0)
                for f in range(lo, lo + size):
                    dx = dz[i, f] * gamma[f]
                    dh[i, f] = dx
                    s1 += dx
                    s2 += dx * xhat[i, f]
                s1 = s1 / count
                s2 = s2 / count
                inv = rstd[i, g]
                for f in range(lo, lo + size):
                    dh[i, f] = inv * (dh[i, f] - s1 - xhat[i, f] * s2)


@numba.njit(**JIT)
def linear_backward(dh, a, n, w, dw, db, da, relu_out):
    """Gradients of ``h = a W^T + b`` from ``dh`` (rows ``0 .. n-1``); with ``da`` of
    non-zero width, the input gradient times the ReLU mask of ``relu_out`` (``a`` itself)."""
    o_, k_ = w.shape
    for o in range(o_):
        db[o] = 0
        for k in range(k_):
            dw[o, k] = 0
    for i in range(n):
        for o in range(o_):
            g = dh[i, o]
            db[o] += g
            row = dw[o]
            for k in range(k_):
                row[k] += g * a[i, k]
    if da.shape[1] == 0:
        return
    for i in range(n):
        for k in range(k_):
            da[i, k] = 0
        for o in range(o_):
            g = dh[i, o]
            wrow = w[o]
            for k in range(k_):
                da[i, k] += g * wrow[k]
        for k in range(k_):
            if not relu_out[i, k] > 0:
                da[i, k] = 0


@numba.njit(**JIT)
def loss_and_grad(z, y, n, dz):
    """Mean cross-entropy of rows ``0 .. n-1`` (float64) and ``dz = (softmax - onehot) / n``;
    returns ``(loss, correct)``: the batch loss and the rows whose first largest logit is the label."""
    c_ = z.shape[1]
    total = 0.0
    correct = 0
    for i in range(n):
        best = 0
        for c in range(1, c_):
            if z[i, c] > z[i, best]:
                best = c
        if best == y[i]:
            correct += 1
        top = np.float64(z[i, best])
        s = 0.0
        for c in range(c_):
            s += exp(np.float64(z[i, c]) - top)
        total += log(s) + top - np.float64(z[i, y[i]])
        for c in range(c_):
            p = exp(np.float64(z[i, c]) - top) / s
            if c == y[i]:
                p -= 1.0
            dz[i, c] = np.float32(p / n)
    return total / n, correct
