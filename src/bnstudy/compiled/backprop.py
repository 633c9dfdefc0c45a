"""The compiled training loop: whole runs of one model, forward, backward and optimiser.

:func:`train_run` trains one network for every epoch of its recipe in one
compiled call (no Python per step). The network is data (:class:`Arch`): a list
of layers, each a weight matrix ``(out, fan_in)`` and bias in one flat parameter
vector (hidden layers also their normaliser's gamma and beta;
:func:`bnstudy.compiled.passes.param_views` cuts the vector, layer after layer), the
hidden layers either linear maps (the MLP) or 3x3 convolutions followed, after the
last, by the average pool (the convolutional network, :mod:`bnstudy.compiled.conv`).
Both families run through this one loop, its optimisers and its accumulation (each
family's passes: :mod:`bnstudy.compiled.passes`). Each step gathers its batch's rows, then:

1. forward, training mode, layer after layer (:func:`bnstudy.compiled.passes.forward_pass`: the
   linear map or convolution, then the normaliser and ReLU, which keeps what backward needs and
   moves the running statistics);
2. the loss and its gradient at the logits (:func:`bnstudy.compiled.gradients.loss_and_grad`);
3. backward, output layer first (:func:`bnstudy.compiled.passes.backward_pass`), into a gradient
   vector laid out as the parameters;
4. one optimiser step (:func:`bnstudy.compiled.optimisers.step_adam` or ``step_sgd``).

:func:`serve_run` runs the forward pass alone over a stream of batches (training-mode serving:
the running statistics move, the weights do not).

:mod:`bnstudy.compiled.gradients` states the arithmetic of every pass, and
:mod:`bnstudy.compiled.optimisers` the steps; both follow :mod:`bnstudy.compiled.kernels`'
discipline (float32, no fast-math, no FMA, every reduction in the order stated).
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.batchstats import batch_parts
from bnstudy.compiled.blocks import transpose_into
from bnstudy.compiled.conv import geometry, no_geometry
from bnstudy.compiled.gradients import FROZEN, loss_and_grad
from bnstudy.compiled.kernels import argmax_rows
from bnstudy.compiled.normkernels import batch_statistics, with_limits
from bnstudy.compiled.optimisers import ADAM, SGD, step_adam, step_sgd
from bnstudy.compiled.passes import (
    backward_pass,
    forward_pass,
    gather,
    new_scratch,
    param_views,
    positions_in,
    running_views,
)

__all__ = ["ADAM", "SGD", "train_run"]

# ---- the records train_run takes ------------------------------------------------------

Arch = namedtuple("Arch", "shapes geometry")
Arch.__doc__ = """A network's layers: ``shapes`` ``(L, 2)`` int64, each layer's weight matrix
``(out, fan_in)`` (input side first, the output layer last). The MLP's: linear layers. A
:class:`ConvArch`: the hidden layers are 3x3 convolutions (``fan_in = 9 * in channels``) of
:class:`bnstudy.compiled.conv.Geometry` ``geometry`` (positions, source tables, strides, residual
connections), the output layer reads their average pool. Every hidden layer is followed by the
normaliser (then a residual addition, if it has one) and ReLU."""

ConvArch = namedtuple("ConvArch", Arch._fields)
ConvArch.__doc__ = """:class:`Arch` of the convolutional network: its own class, so its own type in
compiled code (the family is the type, not a field). The kernels choose each family's code by that
type when they compile (:func:`is_conv`, :func:`hidden_forward`, :func:`output_forward`,
:func:`family_backward`), so a config of the MLP never compiles the convolutions' code
(``train_run`` for the MLP compiles in less than half the time), and the arithmetic is the same
calls in the same order as before."""

State = namedtuple("State", "params running")
State.__doc__ = """What a run trains in place: the flat parameter vector (float32, :func:`param_views`)
and ``running`` ``(2 * hidden layers, F)``: rows ``2l`` and ``2l + 1`` the running mean and
variance of hidden layer ``l`` (its first ``out`` columns)."""

Data = namedtuple("Data", "x y")
Data.__doc__ = """The training rows ``x`` ``(N, in)`` float32 (an image: its ``P`` pixels) and labels ``y`` int64."""

Schedule = namedtuple("Schedule", "rows sizes limits accumulate lr_scale")
Schedule.__doc__ = """Epoch ``e`` feeds rows ``rows[e]`` in consecutive batches of ``sizes``; optimiser
step ``s`` (counted over the run) uses batch renorm's ``limits[s]`` ``(rmax, dmax)``; each batch
runs as ``accumulate`` micro-batches (see :func:`train_run`); the optimiser's learning rate in
epoch ``e`` is its ``lr`` times ``lr_scale[e]`` (float64; 1 throughout: the rate as given)."""

Optimiser = namedtuple("Optimiser", "code lr beta1 beta2 eps momentum")
Optimiser.__doc__ = """:data:`ADAM` (``lr``, ``beta1``, ``beta2``, ``eps``) or :data:`SGD` (``lr``,
``momentum``); float64 settings."""

Log = namedtuple("Log", "loss correct first_grad params_at running_at")
Log.__doc__ = """What a run writes: each epoch's mean batch loss (float64) and correctly labelled rows
(int64), the first step's gradient into ``first_grad`` if it has any elements, and, if ``params_at``
has rows (one per epoch), a copy of the flat parameters and of the running statistics at the end of
each epoch into ``params_at[e]`` and ``running_at[e]`` (copies only: the run's arithmetic is the
same with or without them)."""


def mlp_arch(widths) -> Arch:
    """The MLP of ``widths`` (input, hidden..., classes): linear layers."""
    w = [int(v) for v in widths]
    shapes = np.array([(w[i + 1], w[i]) for i in range(len(w) - 1)], np.int64).reshape(-1, 2)
    return Arch(shapes, no_geometry())


def conv_arch(blocks, classes: int) -> ConvArch:
    """The convolutional network of ``blocks`` (:class:`bnstudy.base.convlayers.Block`, placed on the
    images' side): 3x3 convolutions to each block's channels with its stride, block ``l`` adding the
    output of block ``skip`` before its ReLU (-1: none), then the average pool and a linear map to
    ``classes``."""
    for i, block in enumerate(blocks):
        k = block.skip
        if k >= 0 and blocks[k].channels != block.channels:
            raise ValueError(f"layer {i}: its skip {k} has {blocks[k].channels} channels, not {block.channels}")
    shapes = [(int(b.channels), 9 * int(b.in_channels)) for b in blocks] + [(int(classes), int(blocks[-1].channels))]
    return ConvArch(np.array(shapes, np.int64), geometry(blocks))


def schedule(rows, sizes, limits=None, accumulate: int = 1, lr_scale=None) -> Schedule:
    """A :class:`Schedule` with the kernels' types (limits default to ``(1, 0)`` at every step, the
    learning rate's scale to 1 in every epoch)."""
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if limits is None:
        steps = max(1, rows.shape[0] * len(sizes))
        limits = np.tile(np.array([1.0, 0.0], np.float32), (steps, 1))
    limits = np.ascontiguousarray(limits, dtype=np.float32)
    lr_scale = np.ones(rows.shape[0], np.float64) if lr_scale is None else np.asarray(lr_scale, np.float64)
    if lr_scale.shape != (rows.shape[0],):
        raise ValueError(f"{rows.shape[0]} epochs need {rows.shape[0]} learning-rate scales, got {lr_scale.shape}")
    return Schedule(rows, sizes, limits, int(accumulate), np.ascontiguousarray(lr_scale))


def optimiser(code: int, lr: float, betas=(0.9, 0.999), eps: float = 1e-8, momentum: float = 0.0) -> Optimiser:
    """An :class:`Optimiser` with the kernels' types."""
    return Optimiser(int(code), float(lr), float(betas[0]), float(betas[1]), float(eps), float(momentum))


def new_log(epochs: int, first_grad=None, snapshots=None) -> Log:
    """A :class:`Log` for ``epochs`` epochs (``first_grad``: an array to receive the first gradient;
    ``snapshots``: the run's :class:`State`, whose parameters and running statistics are then copied
    at the end of every epoch)."""
    grad = np.empty(0, np.float32) if first_grad is None else first_grad
    if snapshots is None:
        params_at, running_at = np.zeros((0, 0), np.float32), np.zeros((0, 0, 0), np.float32)
    else:
        params_at = np.zeros((epochs, snapshots.params.shape[0]), np.float32)
        running_at = np.zeros((epochs, *snapshots.running.shape), np.float32)
    return Log(np.zeros(epochs, np.float64), np.zeros(epochs, np.int64), grad, params_at, running_at)


# ---- the loop: its passes in bnstudy.compiled.passes ---------------------------------------


@numba.njit(**JIT)
def accumulated(grad, total, s, accumulate):
    """Micro-batch ``s``'s gradient added to ``total``; after every ``accumulate``-th, ``grad`` becomes
    their mean and ``total`` zero again. Whether an optimiser step is due (always, for ``accumulate = 1``)."""
    if accumulate == 1:
        return True
    for i in range(grad.shape[0]):
        total[i] += grad[i]
    if (s + 1) % accumulate != 0:
        return False
    for i in range(grad.shape[0]):
        grad[i] = total[i] / np.float32(accumulate)
        total[i] = 0
    return True


@numba.njit(**JIT)
def optimiser_step(opt, p, grad, state, step, scale):
    """Step ``step`` (from 1) of the optimiser ``opt`` on ``p`` at learning rate ``opt.lr * scale``
    (float64; a scale of 1 leaves the rate exactly as given); ``state`` its two moment vectors."""
    lr = opt.lr * scale
    if opt.code == ADAM:
        step_adam(p, grad, state[0], state[1], step, lr, opt.beta1, opt.beta2, opt.eps)
    else:
        step_sgd(p, grad, state[0], step, lr, opt.momentum)


@numba.njit(**JIT)
def micro_sizes(plan):
    """The batch sizes run: ``plan.sizes``, or each cut into ``plan.accumulate`` micro-batches."""
    if plan.accumulate > 1:
        return np.repeat(plan.sizes // plan.accumulate, plan.accumulate)
    return plan.sizes.copy()


@numba.njit(**JIT)
def train_run(arch, state, data, plan, ns, opt, updates, log, frozen=False):
    """Train one model (:class:`Arch`, :class:`State`, in place) over ``plan.rows.shape[0]`` epochs.

    ``plan`` (:class:`Schedule`): epoch ``e`` feeds the rows ``plan.rows[e]`` of ``data``
    (:class:`Data`) in consecutive batches of ``plan.sizes``; optimiser step ``s`` uses batch
    renorm's limits ``plan.limits[s]`` and epoch ``e`` the learning rate ``opt.lr * plan.lr_scale[e]``.
    ``ns``: the normaliser's settings (:class:`bnstudy.compiled.normkernels.Settings`, momentum < 0:
    None, the cumulative average);
    ``updates``: the running statistics' update count so far. Writes each epoch's mean batch loss
    and correctly labelled rows into ``log`` (:class:`Log`); returns the update count (ghost
    batch norm: one per virtual batch).

    ``plan.accumulate`` (``k``): each batch of ``n`` rows runs as ``k`` consecutive micro-batches of
    ``n // k`` rows (``n`` divisible by ``k``), each its own forward (normalised over the
    micro-batch, one running-statistics update) and backward; their gradients are added in
    micro-batch order from zero, divided by ``k``, and take one optimiser step. The batch's loss
    is the mean of its micro-batches' losses. ``k = 1``: one batch, one step, as without it.

    The run starts from the given parameters, running statistics and ``updates`` and from a fresh
    optimiser state (Adam's moments zero, step 1 first). With ``frozen``, the normalisation
    layers of a batch-statistics kind stay in inference mode while the weights, gamma and beta
    train (:data:`bnstudy.compiled.gradients.FROZEN`): the running statistics normalise and are never
    written (the returned count still counts the steps).
    """
    p = state.params
    sizes = micro_sizes(plan)
    bmax = 0
    for size in sizes:
        bmax = max(bmax, size)
    sc = new_scratch(arch, ns, data.x.shape[1], bmax)
    params = param_views(p, arch.shapes)
    w, b, gamma, beta = params
    rm, rv = running_views(state.running, arch.shapes)
    views = (w, b, gamma, beta, rm, rv)
    grad, total = np.zeros_like(p), np.zeros_like(p)
    grads = param_views(grad, arch.shapes)
    moments = (np.zeros_like(p), np.zeros_like(p))
    if frozen and batch_statistics(ns.kind):  # the statistics frozen: inference-mode normalisation, no update
        ns = with_limits(ns, FROZEN, ns.setting, ns.rmax, ns.dmax)
    per = positions_in(arch)
    step = 0
    for e in range(plan.rows.shape[0]):
        pos = 0
        loss = 0.0
        correct = 0
        for s in range(sizes.shape[0]):
            n = sizes[s]
            gather(data, plan.rows[e, pos : pos + n], n, per, sc.xb, sc.yb)
            pos += n
            updates += 1
            step_ns = with_limits(ns, ns.kind, ns.setting, plan.limits[step, 0], plan.limits[step, 1])
            for i in range(len(w)):
                transpose_into(w[i], sc.wt[i])
            forward_pass(arch, step_ns, views, sc, n, updates)
            updates += batch_parts(ns.kind, n, ns.setting) - 1  # one update per (virtual) batch
            batch_loss, batch_correct = loss_and_grad(sc.z, sc.yb, n, sc.dz)
            loss += batch_loss / plan.accumulate
            correct += batch_correct
            backward_pass(arch, step_ns, params, grads, sc, n)
            if not accumulated(grad, total, s, plan.accumulate):
                continue
            if step == 0 and log.first_grad.shape[0] > 0:
                log.first_grad[:] = grad
            step += 1
            optimiser_step(opt, p, grad, moments, step, plan.lr_scale[e])
        log.loss[e] = loss / plan.sizes.shape[0]
        log.correct[e] = correct
        if log.params_at.shape[0] > 0:
            log.params_at[e, :] = p
            log.running_at[e, :, :] = state.running
    return updates


@numba.njit(**JIT)
def serve_run(arch, state, data, batches, ns, updates, out):
    """Serve the batches ``data.x[batches[k]]``, ``k = 0, 1, ...``, through one model in training mode:
    :func:`forward_pass` of each batch, which moves the running statistics in ``state`` as a
    training step does (the ``updates + k + 1``-th update), no weight changed; ``out[k]`` receives
    the batch's labels (first largest logit). Returns the update count after the stream."""
    k_, b = batches.shape
    sc = new_scratch(arch, ns, data.x.shape[1], b)
    w, bias, gamma, beta = param_views(state.params, arch.shapes)
    rm, rv = running_views(state.running, arch.shapes)
    views = (w, bias, gamma, beta, rm, rv)
    for i in range(len(w)):
        transpose_into(w[i], sc.wt[i])
    per = positions_in(arch)
    for k in range(k_):
        gather(data, batches[k], b, per, sc.xb, sc.yb)
        updates += 1
        forward_pass(arch, ns, views, sc, b, updates)
        argmax_rows(sc.z[:b], out[k])
    return updates
