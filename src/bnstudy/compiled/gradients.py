"""One layer's training-mode forward pass with what backward needs, and the backward passes, compiled.

The pieces :func:`bnstudy.compiled.backprop.train_run` chains into a training step: the
Linear layer's backward and the loss here, the normalisers' forward and backward
from :mod:`bnstudy.compiled.normkernels` (re-exported as :func:`norm_forward`,
:func:`norm_backward`). The forward arithmetic is :mod:`bnstudy.compiled.kernels`' (training mode); everything here is
float32 in the same discipline (no fast-math, no FMA, every reduction in the
order stated, vectorised only across independent outputs), except the loss,
computed in float64 with :mod:`bnstudy.base.fixedmath`'s ``exp``/``log``.

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
  inference-mode arithmetic of :mod:`bnstudy.compiled.kernels` bit for bit; the running
  statistics are read, never written. Backward through this constant affine map:
  ``dh = dz * (gamma * invstd)``, ``dgamma = sum(dz * xhat)``, ``dbeta = sum(dz)``
  (sums over rows in order).
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT, exp, log
from bnstudy.compiled import normkernels
from bnstudy.compiled.batchstats import frozen_backward as frozen_backward
from bnstudy.compiled.batchstats import frozen_forward as frozen_forward
from bnstudy.compiled.normkernels import FROZEN as FROZEN

# Every normaliser's training-mode forward (keeping what backward needs, moving the running
# statistics) and backward, dispatched on its code: written once, in bnstudy.compiled.normkernels.
norm_forward = normkernels.forward
norm_backward = normkernels.backward


@numba.njit(**JIT)
def linear_backward(dh, a, n, w, dw, db, da, relu_out):
    """Gradients of ``h = a W^T + b`` from ``dh`` (rows ``0 .. n-1``); with ``da`` of
    non-zero width, the input gradient times the ReLU mask of ``relu_out`` (``a`` itself)."""
    o_, k_ = w.shape
    for o in range(o_):
        db[o] = 0
        for k in range(k_):
            dw[o, k] = 0
    weight_grads(dh, a, n, dw, db)
    if da.shape[1] == 0:
        return
    for i in range(n):
        input_grad_row(dh[i], w, da[i])
        for k in range(k_):
            if not relu_out[i, k] > 0:
                da[i, k] = 0


@numba.njit(**JIT)
def weight_grads(dh, a, n, dw, db):
    """``dw[o, k] += dh[r, o] * a[r, k]`` and ``db[o] += dh[r, o]``, rows ``r`` in order. Rows go four
    at a time (each ``dw`` entry loaded and stored once for four rows, the four products added one
    after the other, in row order): the same sums as one row at a time."""
    o_, k_ = dw.shape
    i = 0
    while i + 4 <= n:
        a0, a1, a2, a3 = a[i], a[i + 1], a[i + 2], a[i + 3]
        for o in range(o_):
            g0, g1, g2, g3 = dh[i, o], dh[i + 1, o], dh[i + 2, o], dh[i + 3, o]
            db[o] = db[o] + g0 + g1 + g2 + g3  # left to right: row order
            row = dw[o]
            for k in range(k_):
                s = row[k] + g0 * a0[k]
                s = s + g1 * a1[k]
                s = s + g2 * a2[k]
                row[k] = s + g3 * a3[k]
        i += 4
    while i < n:
        for o in range(o_):
            g = dh[i, o]
            db[o] += g
            row = dw[o]
            for k in range(k_):
                row[k] += g * a[i, k]
        i += 1


@numba.njit(**JIT)
def input_grad_row(g, w, out):
    """``out[k] = sum_o g[o] * w[o, k]``, outputs ``o`` in order from zero. Outputs go eight at a
    time (each ``out`` entry loaded and stored once for eight, the products added in ``o`` order):
    the same sums as one output at a time."""
    o_, k_ = w.shape
    for k in range(k_):
        out[k] = 0
    o = 0
    while o + 8 <= o_:
        g0, g1, g2, g3, g4, g5, g6, g7 = g[o], g[o + 1], g[o + 2], g[o + 3], g[o + 4], g[o + 5], g[o + 6], g[o + 7]
        w0, w1, w2, w3, w4, w5, w6, w7 = w[o], w[o + 1], w[o + 2], w[o + 3], w[o + 4], w[o + 5], w[o + 6], w[o + 7]
        for k in range(k_):
            s = out[k] + g0 * w0[k]
            s = s + g1 * w1[k]
            s = s + g2 * w2[k]
            s = s + g3 * w3[k]
            s = s + g4 * w4[k]
            s = s + g5 * w5[k]
            s = s + g6 * w6[k]
            out[k] = s + g7 * w7[k]
        o += 8
    while o < o_:
        go = g[o]
        wo = w[o]
        for k in range(k_):
            out[k] += go * wo[k]
        o += 1


@numba.njit(**JIT)
def loss_and_grad(z, y, n, dz):
    """Mean cross-entropy of rows ``0 .. n-1`` (float64) and ``dz = (softmax - onehot) / n``;
    returns ``(loss, correct)``: the batch loss and the rows whose first largest logit is the label."""
    c_ = z.shape[1]
    total = 0.0
    correct = 0
    e = np.empty(c_, np.float64)  # each exp computed once, read twice: the same values, half the calls
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
            e[c] = exp(np.float64(z[i, c]) - top)
            s += e[c]
        total += log(s) + top - np.float64(z[i, y[i]])
        for c in range(c_):
            p = e[c] / s
            if c == y[i]:
                p -= 1.0
            dz[i, c] = np.float32(p / n)
    return total / n, correct
