"""The compiled training loop: whole runs of one model, forward, backward and optimiser.

:func:`train_run` trains one network for every epoch of its recipe in one
compiled call (no Python per step). Each step gathers its batch's rows, then:

1. forward, training mode: :func:`bnstudy.compiled.blocks.linear_t` for each Linear and
   :func:`bnstudy.compiled.gradients.norm_forward` for each normaliser and ReLU (which
   keeps what backward needs and moves the running statistics);
2. the loss and its gradient at the logits (:func:`bnstudy.compiled.gradients.loss_and_grad`);
3. backward, output layer first (:func:`bnstudy.compiled.gradients.linear_backward`,
   :func:`bnstudy.compiled.gradients.norm_backward`), into a gradient vector laid out as
   the parameters (:mod:`bnstudy.compiled.optimisers`);
4. one optimiser step (:func:`bnstudy.compiled.optimisers.step_adam` or ``step_sgd``).

:mod:`bnstudy.compiled.gradients` states the arithmetic of every pass, and
:mod:`bnstudy.compiled.optimisers` the parameter vector and the steps; both follow
:mod:`bnstudy.compiled.kernels`' discipline (float32, no fast-math, no FMA, every
reduction in the order stated).
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.blocks import linear_t, transpose_into
from bnstudy.compiled.gradients import FROZEN, linear_backward, loss_and_grad, norm_backward, norm_forward
from bnstudy.compiled.normkernels import batch_parts, batch_statistics, rstd_scratch
from bnstudy.compiled.optimisers import ADAM, SGD, step_adam, step_sgd, views

__all__ = ["ADAM", "SGD", "train_run"]


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
    setting,
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
    accumulate=1,
    frozen=False,
):
    """Train one model in place over ``rows.shape[0]`` epochs.

    ``p`` is the flat parameter vector (:func:`bnstudy.compiled.optimisers.layout`), ``running`` ``(4, F)``
    holds the running mean and variance of layers 1 and 2 (rows 0-3; with
    ``F = max(widths[1], widths[2])``), ``updates`` their update count so far.
    Epoch ``e`` feeds the rows ``rows[e]`` in consecutive batches of
    ``sizes``; step ``s`` (counted over the run) uses batch renorm's limits
    ``limits[s]``. ``momentum < 0`` means None (cumulative average); ``setting``
    is the kind's integer (:func:`bnstudy.compiled.kernels.setting`). Writes each epoch's
    mean batch loss and correctly labelled rows; returns the update count (ghost
    batch norm: one per virtual batch).

    ``accumulate`` (``k``): each batch of ``n`` rows runs as ``k`` consecutive micro-batches of
    ``n // k`` rows (``n`` divisible by ``k``), each its own forward (normalised over the
    micro-batch, one running-statistics update) and backward; their gradients are added in
    micro-batch order from zero, divided by ``k``, and take one optimiser step. The batch's loss
    is the mean of its micro-batches' losses. ``k = 1``: one batch, one step, as without it.

    The run starts from the given ``p``, ``running`` and ``updates`` and from a fresh
    optimiser state (Adam's moments zero, step 1 first). With ``frozen``, the
    normalisation layers of a batch-statistics kind stay in inference mode while the
    weights, gamma and beta train (:data:`bnstudy.compiled.gradients.FROZEN`): the running
    statistics normalise and are never written (the returned count still counts the steps).
    """
    w_in, h1, h2, c_ = widths[0], widths[1], widths[2], widths[3]
    steps = sizes.shape[0]
    if accumulate > 1:  # micro-batches in place of batches; one step per `accumulate` of them
        sizes = np.repeat(sizes // accumulate, accumulate)
    total = np.zeros_like(p)
    bmax = 0
    for s in sizes:
        bmax = max(bmax, s)
    w1, b1, g1, be1, w2, b2, g2, be2, w3, b3 = views(p, w_in, h1, h2, c_)
    grad = np.zeros_like(p)
    dw1, db1, dg1, dbe1, dw2, db2, dg2, dbe2, dw3, db3 = views(grad, w_in, h1, h2, c_)
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
    rstd1 = rstd_scratch(kind, bmax, setting, h1)  # the kind's invstd per virtual batch, or per row and group
    rstd2 = rstd_scratch(kind, bmax, setting, h2)
    st1 = np.empty((5, h1), np.float32)  # mean, var, invstd, r, d of layer 1
    st2 = np.empty((5, h2), np.float32)
    st1[3, :] = 1
    st1[4, :] = 0
    st2[3, :] = 1
    st2[4, :] = 0
    if frozen and batch_statistics(kind):  # the statistics frozen: inference-mode normalisation, no update
        kind = FROZEN
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
            norm_forward(
                kind,
                pre1,
                n,
                g1,
                be1,
                rm1,
                rv1,
                eps,
                setting,
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
            norm_forward(
                kind,
                pre2,
                n,
                g2,
                be2,
                rm2,
                rv2,
                eps,
                setting,
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
            updates += batch_parts(kind, n, setting) - 1  # one update per (virtual) batch
            linear_t(a2[:n], w3t, b3, z)
            batch_loss, batch_correct = loss_and_grad(z, yb, n, dz)
            loss += batch_loss / accumulate
            correct += batch_correct
            linear_backward(dz, a2, n, w3, dw3, db3, da2, a2)
            norm_backward(kind, da2, n, g2, st2[2], st2[3], st2[4], xh2, rstd2, setting, dh2, dg2, dbe2)
            linear_backward(dh2, a1, n, w2, dw2, db2, da1, a1)
            norm_backward(kind, da1, n, g1, st1[2], st1[3], st1[4], xh1, rstd1, setting, dh1, dg1, dbe1)
            linear_backward(dh1, xb, n, w1, dw1, db1, none, xb)
            if accumulate > 1:  # add this micro-batch's gradient; step after the last one
                for i in range(p.shape[0]):
                    total[i] += grad[i]
                if (s + 1) % accumulate != 0:
                    continue
                for i in range(p.shape[0]):
                    grad[i] = total[i] / np.float32(accumulate)
                    total[i] = 0
            step += 1
            if optimizer == ADAM:
                step_adam(p, grad, state1, state2, step, lr, beta1, beta2, adam_eps)
            else:
                step_sgd(p, grad, state1, step, lr, sgd_momentum)
        epoch_loss[e] = loss / steps
        epoch_correct[e] = correct
    return updates
