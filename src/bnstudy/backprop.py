"""The compiled training loop: whole runs of one model, forward, backward and optimiser.

:func:`train_run` trains one network for every epoch of its recipe in one
compiled call (no Python per step). The forward pass is :mod:`bnstudy.kernels`'
canonical arithmetic, training mode; the backward pass and the optimisers are
written here in the same discipline (float32, no fast-math, no FMA, every
reduction in the order stated, vectorised only across independent outputs).
The loss is computed in float64 with :mod:`bnstudy.fixedmath`'s ``exp``/``log``.

Per step, with ``B`` rows, ``D = d loss / d logits``:

- loss: per row ``log(sum_c exp(z_c - max)) + max - z_y`` (classes in order),
  the batch loss their mean over rows (row order); ``D = (softmax - onehot) / B``
  in float64, rounded to float32;
- Linear ``h = a W^T + b``: ``dW[o, :] = sum_rows dh[r, o] * a[r, :]`` and
  ``db[o] = sum_rows dh[r, o]`` (rows in order, from zero);
  ``da[r, :] = sum_o dh[r, o] * W[o, :]`` (outputs in order, from zero);
- ReLU: the gradient passes where the ReLU's output is positive;
- batch norm (per feature, sums over rows in order): ``dxhat = dz * gamma`` (renorm:
  ``dz * gamma * r``), ``dh = invstd * (dxhat - sum(dxhat) / B - xhat * (sum(dxhat * xhat) / B))``,
  ``dgamma = sum(dz * xhat)`` (renorm: ``sum(dz * (xhat * r + d))``), ``dbeta = sum(dz)``;
  ``r`` and ``d`` are constants (Ioffe 2017);
- layer and group norm (per row and group, sums over features in order): the same
  formula with the group's statistics; ``dgamma``/``dbeta`` summed over rows;
- running statistics (batch norms), after the step's forward pass, PyTorch's rule:
  ``running = (1 - f) * running + f * batch`` with the unbiased batch variance
  ``var * B / (B - 1)``; ``f`` is the momentum, or ``1 / t`` at the ``t``-th update
  when the momentum is None (cumulative average);
- Adam (PyTorch's defaults, no weight decay), at step ``t``:
  ``m = beta1 m + (1 - beta1) g``, ``v = beta2 v + (1 - beta2) g g``,
  ``p = p - (lr / (1 - beta1**t)) * (m / (sqrt(v) / sqrt(1 - beta2**t) + eps))``, the
  powers by :func:`bnstudy.fixedmath.powi` and the two bias corrections in float64,
  rounded to float32;
- SGD with momentum ``mu`` (no dampening): ``buf = g`` at the first step, then
  ``buf = mu buf + g``; ``p = p - lr buf``.

A model's parameters live in one flat float32 vector, in the order ``W1, b1,
gamma1, beta1, W2, b2, gamma2, beta2, W3, b3`` (weights in PyTorch's ``(out, in)``
layout); a network without a normaliser keeps gamma and beta at 1 and 0 (their
gradient is zero, so Adam and SGD leave them exactly as they are).
"""

from __future__ import annotations

import numba
import numpy as np

from .fixedmath import JIT, exp, log, powi
from .kernels import (
    BATCH,
    GROUP,
    LAYER,
    NONE,
    RENORM,
    batch_moments,
    batch_norm_rows,
    linear_t,
    renorm_rd,
    row_norm,
    transpose_into,
)

ADAM, SGD = 0, 1


def layout(widths) -> list[tuple[str, tuple[int, ...]]]:
    """The flat vector's parts: ``(state-dict key, shape)`` in order."""
    w_in, h1, h2, c = widths
    return [
        ("0.weight", (h1, w_in)),
        ("0.bias", (h1,)),
        ("1.weight", (h1,)),
        ("1.bias", (h1,)),
        ("3.weight", (h2, h1)),
        ("3.bias", (h2,)),
        ("4.weight", (h2,)),
        ("4.bias", (h2,)),
        ("6.weight", (c, h2)),
        ("6.bias", (c,)),
    ]


@numba.njit(**JIT)
def _norm_forward(
    kind,
    h,
    n,
    gamma,
    beta,
    rm,
    rv,
    eps,
    groups,
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
    moves the running statistics (batch norms)."""
    f_ = h.shape[1]
    if kind == BATCH or kind == RENORM:
        batch_moments(h, 0, n, mean, var)
        for f in range(f_):
            invstd[f] = np.float32(1) / np.sqrt(var[f] + eps)
        if kind == RENORM:  # from the running statistics before this step's update
            renorm_rd(mean, var, rm, rv, eps, rmax, dmax, r, d)
        batch_norm_rows(h, 0, n, mean, invstd, gamma, beta, r, d, kind == RENORM, True, out, 0, xhat)
        if momentum < 0:  # None: cumulative average
            factor = np.float32(1) / np.float32(update_count)
        else:
            factor = momentum
        keep = np.float32(1) - factor
        correction = np.float32(n) / np.float32(n - 1)
        for f in range(f_):
            rm[f] = keep * rm[f] + factor * mean[f]
            rv[f] = keep * rv[f] + factor * (var[f] * correction)
    elif kind == LAYER or kind == GROUP:
        for i in range(n):
            row_norm(h, i, groups, eps, gamma, beta, True, out, xhat, rstd)
    else:
        for i in range(n):
            for f in range(f_):
                y = h[i, f]
                out[i, f] = y if y > 0 else np.float32(0)


@numba.njit(**JIT)
def _norm_backward(kind, dz, n, gamma, invstd, r, d, xhat, rstd, groups, dh, dgamma, dbeta):
    """``dh`` from ``dz`` (the gradient at the normaliser's output, ReLU already applied)."""
    f_ = dz.shape[1]
    if kind == NONE:
        for i in range(n):
            for f in range(f_):
                dh[i, f] = dz[i, f]
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
    if kind == BATCH or kind == RENORM:
        count = np.float32(n)
        sum1 = np.zeros(f_, np.float32)
        sum2 = np.zeros(f_, np.float32)
        for i in range(n):
            for f in range(f_):
                dx = dz[i, f] * gamma[f] * r[f] if renorm else dz[i, f] * gamma[f]
                dh[i, f] = dx
                sum1[f] += dx
                sum2[f] += dx * xhat[i, f]
        for f in range(f_):
            sum1[f] = sum1[f] / count
            sum2[f] = sum2[f] / count
        for i in range(n):
            for f in range(f_):
                dh[i, f] = invstd[f] * (dh[i, f] - sum1[f] - xhat[i, f] * sum2[f])
    else:
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
def _linear_backward(dh, a, n, w, dw, db, da, relu_out):
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
def _loss_and_grad(z, y, n, dz):
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


@numba.njit(**JIT)
def _step_adam(p, g, m, v, t, lr, beta1, beta2, eps):
    bc1 = 1.0 - powi(beta1, t)
    bc2 = 1.0 - powi(beta2, t)
    step = np.float32(lr / bc1)
    bc2_sqrt = np.float32(np.sqrt(bc2))
    b1 = np.float32(beta1)
    b2 = np.float32(beta2)
    c1 = np.float32(1.0 - beta1)
    c2 = np.float32(1.0 - beta2)
    e = np.float32(eps)
    for i in range(p.shape[0]):
        gi = g[i]
        m[i] = b1 * m[i] + c1 * gi
        v[i] = b2 * v[i] + c2 * (gi * gi)
        p[i] = p[i] - step * (m[i] / (np.sqrt(v[i]) / bc2_sqrt + e))


@numba.njit(**JIT)
def _step_sgd(p, g, buf, t, lr, momentum):
    lr32 = np.float32(lr)
    mu = np.float32(momentum)
    for i in range(p.shape[0]):
        if momentum == 0.0:
            d = g[i]
        else:
            if t == 1:
                buf[i] = g[i]
            else:
                buf[i] = mu * buf[i] + g[i]
            d = buf[i]
        p[i] = p[i] - lr32 * d


@numba.njit(**JIT)
def _views(flat, w_in, h1, h2, c_):
    """The parts of a flat vector laid out as :func:`layout` says, as views."""
    w1 = flat[: h1 * w_in].reshape((h1, w_in))
    o = h1 * w_in
    b1, g1, be1 = flat[o : o + h1], flat[o + h1 : o + 2 * h1], flat[o + 2 * h1 : o + 3 * h1]
    o += 3 * h1
    w2 = flat[o : o + h2 * h1].reshape((h2, h1))
    o += h2 * h1
    b2, g2, be2 = flat[o : o + h2], flat[o + h2 : o + 2 * h2], flat[o + 2 * h2 : o + 3 * h2]
    o += 3 * h2
    w3 = flat[o : o + c_ * h2].reshape((c_, h2))
    o += c_ * h2
    return w1, b1, g1, be1, w2, b2, g2, be2, w3, flat[o : o + c_]


@numba.njit(**JIT)
def train_run(
    kind,
    widths,
    p,
    running,
    x,
    y,
    rows,
    sizes,
    limits,
    eps,
    groups,
    momentum,
    optimizer,
    lr,
    beta1,
    beta2,
    adam_eps,
    sgd_momentum,
    updates,
    epoch_loss,
    epoch_correct,
):
    """Train one model in place over ``rows.shape[0]`` epochs.

    ``p`` is the flat parameter vector (:func:`layout`), ``running`` ``(4, F)``
    holds the running mean and variance of layers 1 and 2 (rows 0-3; with
    ``F = max(widths[1], widths[2])``), ``updates`` their update count so far.
    Epoch ``e`` feeds the rows ``rows[e]`` in consecutive batches of
    ``sizes``; step ``s`` (counted over the run) uses batch renorm's limits
    ``limits[s]``. ``momentum < 0`` means None (cumulative average). Writes each
    epoch's mean batch loss and correctly labelled rows; returns the update count.
    """
    w_in, h1, h2, c_ = widths[0], widths[1], widths[2], widths[3]
    bmax = 0
    for s in sizes:
        bmax = max(bmax, s)
    w1, b1, g1, be1, w2, b2, g2, be2, w3, b3 = _views(p, w_in, h1, h2, c_)
    grad = np.zeros_like(p)
    dw1, db1, dg1, dbe1, dw2, db2, dg2, dbe2, dw3, db3 = _views(grad, w_in, h1, h2, c_)
    state1 = np.zeros_like(p)
    state2 = np.zeros_like(p)
    rm1, rv1, rm2, rv2 = running[0, :h1], running[1, :h1], running[2, :h2], running[3, :h2]
    w1t = np.empty((w_in, h1), np.float32)
    w2t = np.empty((h1, h2), np.float32)
    w3t = np.empty((h2, c_), np.float32)
    xb = np.empty((bmax, w_in), np.float32)
    yb = np.empty(bmax, np.int64)
    pre1 = np.empty((bmax, h1), np.float32)
    a1 = np.empty((bmax, h1), np.float32)
    xh1 = np.empty((bmax, h1), np.float32)
    pre2 = np.empty((bmax, h2), np.float32)
    a2 = np.empty((bmax, h2), np.float32)
    xh2 = np.empty((bmax, h2), np.float32)
    z = np.empty((bmax, c_), np.float32)
    dz = np.empty((bmax, c_), np.float32)
    da2 = np.empty((bmax, h2), np.float32)
    dh2 = np.empty((bmax, h2), np.float32)
    da1 = np.empty((bmax, h1), np.float32)
    dh1 = np.empty((bmax, h1), np.float32)
    none = np.empty((bmax, 0), np.float32)
    rstd1 = np.empty((bmax, groups), np.float32)
    rstd2 = np.empty((bmax, groups), np.float32)
    st1 = np.empty((5, h1), np.float32)  # mean, var, invstd, r, d of layer 1
    st2 = np.empty((5, h2), np.float32)
    st1[3, :] = 1
    st1[4, :] = 0
    st2[3, :] = 1
    st2[4, :] = 0
    step = 0
    for e in range(rows.shape[0]):
        pos = 0
        loss = 0.0
        correct = 0
        for s in range(sizes.shape[0]):
            n = sizes[s]
            for i in range(n):
                row = rows[e, pos + i]
                yb[i] = y[row]
                for k in range(w_in):
                    xb[i, k] = x[row, k]
            pos += n
            updates += 1
            rmax = limits[step, 0]
            dmax = limits[step, 1]
            transpose_into(w1, w1t)
            transpose_into(w2, w2t)
            transpose_into(w3, w3t)
            linear_t(xb[:n], w1t, b1, pre1)
            _norm_forward(
                kind,
                pre1,
                n,
                g1,
                be1,
                rm1,
                rv1,
                eps,
                groups,
                momentum,
                updates,
                rmax,
                dmax,
                st1[0],
                st1[1],
                st1[2],
                st1[3],
                st1[4],
                a1,
                xh1,
                rstd1,
            )
            linear_t(a1[:n], w2t, b2, pre2)
            _norm_forward(
                kind,
                pre2,
                n,
                g2,
                be2,
                rm2,
                rv2,
                eps,
                groups,
                momentum,
                updates,
                rmax,
                dmax,
                st2[0],
                st2[1],
                st2[2],
                st2[3],
                st2[4],
                a2,
                xh2,
                rstd2,
            )
            linear_t(a2[:n], w3t, b3, z)
            batch_loss, batch_correct = _loss_and_grad(z, yb, n, dz)
            loss += batch_loss
            correct += batch_correct
            _linear_backward(dz, a2, n, w3, dw3, db3, da2, a2)
            _norm_backward(kind, da2, n, g2, st2[2], st2[3], st2[4], xh2, rstd2, groups, dh2, dg2, dbe2)
            _linear_backward(dh2, a1, n, w2, dw2, db2, da1, a1)
            _norm_backward(kind, da1, n, g1, st1[2], st1[3], st1[4], xh1, rstd1, groups, dh1, dg1, dbe1)
            _linear_backward(dh1, xb, n, w1, dw1, db1, none, xb)
            step += 1
            if optimizer == ADAM:
                _step_adam(p, grad, state1, state2, step, lr, beta1, beta2, adam_eps)
            else:
                _step_sgd(p, grad, state1, step, lr, sgd_momentum)
        epoch_loss[e] = loss / sizes.shape[0]
        epoch_correct[e] = correct
    return updates
