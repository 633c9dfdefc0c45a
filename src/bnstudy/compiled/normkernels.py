"""Every normaliser's compiled arithmetic: the records its kernels take, and the dispatch on its code.

A normaliser's arithmetic is written once (float32, the discipline of
:mod:`bnstudy.compiled.kernels`: no fast-math, no FMA, every reduction in the order
written, vectorised only across independent outputs): the kinds with batch statistics in
:mod:`bnstudy.compiled.batchstats`, those with per-example statistics in
:mod:`bnstudy.compiled.examplenorms`, none (the ReLU alone) here; and everything that
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
  the statistics of one (virtual) batch (``batchstats.batch_stats``, the probes' step).

The dispatch functions at the end (:func:`inference`, :func:`train`,
:func:`forward`, :func:`backward`, :func:`row_forward` and the convolutional
network's :func:`spatial_layer`, :func:`spatial_forward`,
:func:`spatial_backward`) branch on the kind's code (:mod:`bnstudy.base.normalisers`),
an integer argument: one compiled specialisation serves every kind. The
convolutional network has none, batch norm, batch renorm, ghost batch norm (their
batch-statistics arithmetic on the rows of examples x positions: its virtual batch
of ``setting`` examples is ``setting * positions`` rows, :func:`spatial_settings`),
layer and group norm (per example over its channels x positions).

Adding a normaliser's arithmetic: a section of its functions (in the module of its kind of
statistics), and a branch on its code in each dispatch function it needs (a kind that normalises each row by
itself needs only :func:`row_forward` and :func:`row_backward`).
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.base.normalisers import BATCH, GHOST, GROUP, LAYER, RENORM, RMS
from bnstudy.compiled.batchstats import (
    affine_grads,
    batch_backward,
    batch_forward,
    batch_inference,
    batch_norm_rows,
    batch_train,
    frozen_backward,
    frozen_forward,
    running_stats,
    virtual_batches,
)
from bnstudy.compiled.examplenorms import (
    group_norm_example_backward,
    rms_row,
    rms_row_backward,
    row_norm,
    spatial_norm,
    spatial_norm_backward,
)

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


# ---- batch norm, batch renorm, ghost batch norm: bnstudy.compiled.batchstats -------------
# ---- layer norm, group norm, RMS norm: bnstudy.compiled.examplenorms -----------------------


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
