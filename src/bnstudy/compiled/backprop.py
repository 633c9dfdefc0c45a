"""The compiled training loop: whole runs of one model, forward, backward and optimiser.

:func:`train_run` trains one network for every epoch of its recipe in one
compiled call (no Python per step). The network is data (:class:`Arch`): a list
of layers, each a weight matrix ``(out, fan_in)`` and bias in one flat parameter
vector (hidden layers also their normaliser's gamma and beta; :func:`param_views`
cuts the vector, layer after layer), the hidden layers either linear maps (the
MLP) or 3x3 convolutions followed, after the last, by the average pool (the
convolutional network, :mod:`bnstudy.compiled.conv`). Both families run through this one
loop, its optimisers and its accumulation. Each step gathers its batch's rows, then:

1. forward, training mode, layer after layer (:func:`forward_pass`):
   :func:`bnstudy.compiled.blocks.linear_t` (a convolution: its arithmetic, ``conv.im2col`` then
   ``linear_t``, by :mod:`bnstudy.compiled.convgemm`'s register-tiled kernels, chunk by chunk of
   examples: :func:`conv_layer_forward`) and the normaliser and ReLU (:func:`bnstudy.compiled.gradients.norm_forward`,
   or its per-image form :func:`bnstudy.compiled.normkernels.spatial_forward`), which keeps
   what backward needs and moves the running statistics;
2. the loss and its gradient at the logits (:func:`bnstudy.compiled.gradients.loss_and_grad`);
3. backward, output layer first (:func:`backward_pass`:
   :func:`bnstudy.compiled.gradients.linear_backward`, :func:`bnstudy.compiled.gradients.norm_backward`;
   a convolution's sums those of ``linear_backward`` on its patches then ``conv.col2im``, by
   :mod:`bnstudy.compiled.convgemm`, :func:`conv_backward`), into a gradient vector laid out as the parameters;
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
from numba.extending import overload

from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.blocks import linear_t, transpose_into
from bnstudy.compiled.conv import (
    P_IN,
    P_OUT,
    SKIP,
    add_relu,
    average_pool,
    geometry,
    no_geometry,
    table_of,
)
from bnstudy.compiled.convgemm import (
    ROW_BLOCK,
    across_columns,
    bias_grad_rows,
    chunk_examples,
    col2im_add,
    column_order,
    conv_forward_chunks,
    conv_input_grad,
    im2col_offsets,
    offsets_major,
    relu_mask,
    weight_grad_buffer,
    weight_grad_finish,
    weight_grad_rows,
)
from bnstudy.compiled.gradients import FROZEN, linear_backward, loss_and_grad, norm_backward, norm_forward
from bnstudy.compiled.kernels import argmax_rows
from bnstudy.compiled.normkernels import (
    Keep,
    Params,
    batch_parts,
    batch_statistics,
    new_stats,
    rstd_scratch,
    spatial_backward,
    spatial_forward,
    with_limits,
)
from bnstudy.compiled.optimisers import ADAM, SGD, step_adam, step_sgd

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

Scratch = namedtuple(
    "Scratch",
    "xb yb wt patches dpatches pre act xhat da dh rstd stats pooled dpooled ones z dz none order woff ident gbuf chunk",
)


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


# ---- the network's parts ----------------------------------------------------------------


@numba.njit(**JIT)
def param_views(flat, shapes):
    """The layers' parts of a flat vector, as views: lists of weights ``(out, fan_in)`` and biases
    of every layer, and of gamma and beta of every hidden layer, laid out layer after layer
    (each: weight, bias, then gamma and beta)."""
    layers = shapes.shape[0]
    starts = np.empty(layers, np.int64)
    o = 0
    for i in range(layers):
        starts[i] = o
        o += shapes[i, 0] * shapes[i, 1] + shapes[i, 0] * (3 if i < layers - 1 else 1)
    w = [
        flat[starts[i] : starts[i] + shapes[i, 0] * shapes[i, 1]].reshape((shapes[i, 0], shapes[i, 1]))
        for i in range(layers)
    ]
    vec = [
        flat[starts[i] + shapes[i, 0] * (shapes[i, 1] + k) : starts[i] + shapes[i, 0] * (shapes[i, 1] + k + 1)]
        for i in range(layers)
        for k in range(3)
    ]
    b = [vec[3 * i] for i in range(layers)]
    gamma = [vec[3 * i + 1] for i in range(layers - 1)]
    beta = [vec[3 * i + 2] for i in range(layers - 1)]
    return w, b, gamma, beta


@numba.njit(**JIT)
def running_views(running, shapes):
    """Hidden layer ``l``'s running mean and variance: rows ``2l`` and ``2l + 1`` of ``running``."""
    mean = [running[2 * i, : shapes[i, 0]] for i in range(shapes.shape[0] - 1)]
    var = [running[2 * i + 1, : shapes[i, 0]] for i in range(shapes.shape[0] - 1)]
    return mean, var


# ---- each family's code, chosen by the arch's type when a kernel compiles ---------------
# Each function below is plain Python for Python callers and, in compiled code, the overload for
# the arch's type: the MLP's type never sees the convolutions' code.


def _conv_type(arch_type) -> bool:
    """Whether a compiled arch's type is :class:`ConvArch`'s."""
    return getattr(arch_type, "instance_class", None) is ConvArch


def is_conv(arch) -> bool:
    """Whether ``arch`` is the convolutional network's (in compiled code a constant of its type)."""
    return isinstance(arch, ConvArch)


@overload(is_conv)
def _is_conv(arch):
    conv = _conv_type(arch)
    return lambda arch: conv


def positions_in(arch):
    """Rows per example at the network's input: the image's positions, or 1 (the MLP)."""
    return arch.geometry.layers[0, P_IN] if is_conv(arch) else 1


@overload(positions_in)
def _positions_in(arch):
    if _conv_type(arch):
        return lambda arch: arch.geometry.layers[0, P_IN]
    return lambda arch: np.int64(1)


def positions_out(arch, layer):
    """Rows per example at hidden layer ``layer``'s output: its positions, or 1 (the MLP)."""
    return arch.geometry.layers[layer, P_OUT] if is_conv(arch) else 1


@overload(positions_out)
def _positions_out(arch, layer):
    if _conv_type(arch):
        return lambda arch, layer: arch.geometry.layers[layer, P_OUT]
    return lambda arch, layer: np.int64(1)


@numba.njit(**JIT)
def new_scratch(arch, ns, inputs, bmax):
    """Every scratch array of a run with batches of up to ``bmax`` examples of ``inputs`` values."""
    shapes = arch.shapes
    hidden = shapes.shape[0] - 1
    per = positions_in(arch)
    f32 = np.float32
    feats = [shapes[i, 0] for i in range(hidden)]
    rows = [bmax * positions_out(arch, i) for i in range(hidden)]
    chunk = [chunk_examples(positions_out(arch, i), shapes[i, 1], bmax) if is_conv(arch) else 0 for i in range(hidden)]
    wide = [np.empty((chunk[i] * positions_out(arch, i), shapes[i, 1]), f32) for i in range(hidden)]
    per_layer = [np.empty((rows[i], feats[i]), f32) for i in range(hidden)]
    last, classes = shapes[hidden, 1], shapes[hidden, 0]
    return Scratch(
        np.empty((bmax * per, inputs // per), f32), np.empty(bmax, np.int64),
        [np.empty((shapes[i, 1], shapes[i, 0]), f32) for i in range(hidden + 1)],
        wide, [a.copy() for a in wide], per_layer, [a.copy() for a in per_layer], [a.copy() for a in per_layer],
        [a.copy() for a in per_layer], [a.copy() for a in per_layer],
        [rstd_scratch(ns.kind, bmax, ns.setting, f) for f in feats], [new_stats(f) for f in feats],
        np.empty((bmax, last), f32), np.empty((bmax, last), f32), np.ones((bmax, last), f32),
        np.empty((bmax, classes), f32), np.empty((bmax, classes), f32), np.empty((bmax * per, 0), f32),
        [column_order(shapes[i, 1] // 9 if is_conv(arch) else 0) for i in range(hidden)],
        [np.empty((shapes[i, 0] if is_conv(arch) else 0, shapes[i, 1]), f32) for i in range(hidden)],
        np.arange(max(ROW_BLOCK, np.max(shapes[:, 0]))),
        np.empty(np.max(shapes[:, 0] * shapes[:, 1]) if is_conv(arch) else 0, f32),
        np.array(chunk, np.int64),
    )  # fmt: skip


@numba.njit(**JIT)
def gather(data, rows, n, per, xb, yb):
    """The batch's ``n`` examples (row indices ``rows``) into ``xb`` (``per`` rows each) and ``yb``."""
    cin = data.x.shape[1] // per
    for i in range(n):
        row = rows[i]
        yb[i] = data.y[row]
        for q in range(per):
            for k in range(cin):
                xb[i * per + q, k] = data.x[row, q * cin + k]


@numba.njit(**JIT)
def conv_layer_forward(src, n, geo, i, sc, bias):
    """Convolution ``i``'s outputs ``sc.pre[i]`` for ``n`` examples of ``src``, a chunk of
    ``sc.chunk[i]`` examples at a time (each output's sum does not depend on the chunks):
    offset-major patches (:func:`bnstudy.compiled.convgemm.im2col_offsets`) then their product
    (:func:`bnstudy.compiled.convgemm.conv_forward`, ``linear_t``'s sums)."""
    conv_forward_chunks(
        src,
        n,
        geo.layers[i, P_IN],
        table_of(geo, i),
        sc.chunk[i],
        sc.patches[i],
        sc.order[i],
        sc.wt[i],
        bias,
        sc.pre[i],
    )


@numba.njit(**JIT)
def forward_pass(arch, ns, views, sc, n, updates):
    """Training-mode forward of a batch of ``n`` examples (``sc.xb``) to the logits ``sc.z``;
    ``views``: the parameters' (:func:`param_views`) and the running statistics' views."""
    w, b, gamma, beta, rm, rv = views
    hidden = len(gamma)
    src = sc.xb
    for i in range(hidden):
        lp = Params(gamma[i], beta[i], rm[i], rv[i])
        keep = Keep(sc.stats[i], sc.xhat[i], sc.rstd[i])
        hidden_forward(arch, ns, lp, keep, src, n, i, sc, b[i], updates)
        src = sc.act[i]
    output_forward(arch, src, n, sc, b[hidden], hidden)


def hidden_forward(arch, ns, lp, keep, src, n, i, sc, bias, updates):
    """Hidden layer ``i`` of :func:`forward_pass` (compiled code only): a convolution with its
    residual addition, or a linear map, then the normaliser and ReLU into ``sc.act[i]``."""
    raise TypeError("hidden_forward runs in compiled code only")


@overload(hidden_forward)
def _hidden_forward(arch, ns, lp, keep, src, n, i, sc, bias, updates):
    if _conv_type(arch):

        def conv_layer(arch, ns, lp, keep, src, n, i, sc, bias, updates):
            geo = arch.geometry
            r = n * geo.layers[i, P_OUT]
            skip = geo.layers[i, SKIP]
            conv_layer_forward(src, n, geo, i, sc, bias)
            spatial_forward(ns, lp, sc.pre[i][:r], n, geo.layers[i, P_OUT], updates, keep, skip < 0, sc.act[i])
            if skip >= 0:
                add_relu(sc.act[i], sc.act[skip], r)

        return conv_layer

    def linear_layer(arch, ns, lp, keep, src, n, i, sc, bias, updates):
        linear_t(src[:n], sc.wt[i], bias, sc.pre[i])
        norm_forward(ns, lp, sc.pre[i], n, updates, keep, sc.act[i])

    return linear_layer


def output_forward(arch, src, n, sc, bias, hidden):
    """The output layer of :func:`forward_pass` (compiled code only): the logits ``sc.z`` from the
    last hidden layer's output ``src`` (the convolutional network: from its average pool)."""
    raise TypeError("output_forward runs in compiled code only")


@overload(output_forward)
def _output_forward(arch, src, n, sc, bias, hidden):
    if _conv_type(arch):

        def pooled(arch, src, n, sc, bias, hidden):
            average_pool(src, n, arch.geometry.layers[hidden - 1, P_OUT], sc.pooled)
            linear_t(sc.pooled[:n], sc.wt[hidden], bias, sc.z[:n])

        return pooled

    def linear(arch, src, n, sc, bias, hidden):
        linear_t(src[:n], sc.wt[hidden], bias, sc.z)

    return linear


@numba.njit(**JIT)
def unpool(dpooled, act, n, positions, da):
    """The average pool's backward: ``dz / positions`` to every position, then the ReLU mask of ``act``."""
    inv = np.float32(positions)
    for i in range(n):
        for q in range(positions):
            for c in range(act.shape[1]):
                r = i * positions + q
                da[r, c] = dpooled[i, c] / inv if act[r, c] > 0 else np.float32(0)


@numba.njit(**JIT)
def gather_skips(geo, sc, i, rows):
    """The gradient at layer ``i``'s output ``sc.da[i]`` (from layer ``i + 1``), plus the masked
    gradient at the normaliser's output of every later layer that adds layer ``i``'s output, those
    layers in increasing order; then the ReLU mask of ``sc.act[i]``. Nothing if none adds it."""
    added = False
    da, act = sc.da[i], sc.act[i]
    for j in range(i + 1, geo.layers.shape[0]):
        if geo.layers[j, SKIP] == i:
            added = True
            g = sc.da[j]
            for r in range(rows):
                for c in range(da.shape[1]):
                    da[r, c] += g[r, c]
    if added:
        for r in range(rows):
            for c in range(da.shape[1]):
                if not act[r, c] > 0:
                    da[r, c] = 0


@numba.njit(**JIT)
def conv_backward(ns, params, grads, sc, n, i, geo):
    """Backward of convolutional layer ``i`` from ``sc.da[i]``: its residual gradients gathered
    (:func:`gather_skips`), the normaliser's backward, the convolution's weight gradients and (but
    for the first layer) its input gradient into ``sc.da[i - 1]`` (:func:`bnstudy.compiled.conv.col2im`
    with the ReLU mask of the layer's input), in chunks of examples: each chunk's offset-major
    patches are made again (:func:`bnstudy.compiled.convgemm.im2col_offsets`), their products
    added to the weight gradients' sums (rows in order, chunk after chunk) and their input
    gradients into the positions they were copied from (:mod:`bnstudy.compiled.convgemm`)."""
    w, gamma = params[0], params[2]
    dw, db, dgamma, dbeta = grads
    positions = geo.layers[i, P_OUT]
    r = n * positions
    gather_skips(geo, sc, i, r)
    keep = Keep(sc.stats[i], sc.xhat[i], sc.rstd[i])
    spatial_backward(ns, gamma[i], keep, sc.da[i][:r], n, positions, sc.dh[i], dgamma[i], dbeta[i])
    channels = w[i].shape[1] // 9
    p_in, table = geo.layers[i, P_IN], table_of(geo, i)
    src = sc.xb if i == 0 else sc.act[i - 1]
    dh = sc.dh[i]
    for o in range(db[i].shape[0]):
        db[i][o] = 0
    across = across_columns(dw[i])
    g = weight_grad_buffer(dw[i], sc.gbuf)
    below = sc.da[i - 1] if i > 0 else sc.da[0]
    if i > 0:
        offsets_major(w[i], channels, sc.woff[i])
    step = sc.chunk[i]
    for n0 in range(0, n, step):  # chunk by chunk: the patches again, then their gradients
        m = min(step, n - n0)
        rows = m * positions
        im2col_offsets(src[n0 * p_in : (n0 + m) * p_in], m, p_in, table, sc.patches[i])
        part = dh[n0 * positions : n0 * positions + rows]
        bias_grad_rows(part, rows, db[i])
        weight_grad_rows(part, sc.patches[i], rows, across, g, sc.ident)
        if i > 0:
            # a chunk's patches are copied from its own examples' positions only, so those
            # positions' gradients are complete after it: zeroed, added, masked
            conv_input_grad(part, rows, sc.woff[i], sc.ident, sc.dpatches[i])
            lo, hi = n0 * p_in, (n0 + m) * p_in
            for q in range(lo, hi):
                for c in range(below.shape[1]):
                    below[q, c] = 0
            col2im_add(sc.dpatches[i], m, p_in, table, below[lo:hi])
            relu_mask(below[lo:hi], src[lo:hi], hi - lo)
    weight_grad_finish(g, across, channels, dw[i])


@numba.njit(**JIT)
def backward_pass(arch, ns, params, grads, sc, n):
    """Backward of :func:`forward_pass` from ``sc.dz``, output layer first, into ``grads``' views
    (weights, biases, gammas, betas) of the gradient vector; ``params``: the parameters' views."""
    family_backward(arch, ns, params, grads, sc, n)


def family_backward(arch, ns, params, grads, sc, n):
    """:func:`backward_pass` of the arch's family (compiled code only)."""
    raise TypeError("family_backward runs in compiled code only")


@overload(family_backward)
def _family_backward(arch, ns, params, grads, sc, n):
    if _conv_type(arch):

        def convolutions(arch, ns, params, grads, sc, n):
            w = params[0]
            dw, db, dgamma = grads[0], grads[1], grads[2]
            hidden = len(dgamma)
            top = sc.act[hidden - 1]
            positions = arch.geometry.layers[hidden - 1, P_OUT]
            linear_backward(sc.dz, sc.pooled, n, w[hidden], dw[hidden], db[hidden], sc.dpooled, sc.ones)
            unpool(sc.dpooled, top, n, positions, sc.da[hidden - 1])
            for i in range(hidden - 1, -1, -1):
                conv_backward(ns, params, grads, sc, n, i, arch.geometry)

        return convolutions

    def linear_layers(arch, ns, params, grads, sc, n):
        w, gamma = params[0], params[2]
        dw, db, dgamma, dbeta = grads
        hidden = len(dgamma)
        top = sc.act[hidden - 1]
        linear_backward(sc.dz, top, n, w[hidden], dw[hidden], db[hidden], sc.da[hidden - 1], top)
        for i in range(hidden - 1, -1, -1):
            keep = Keep(sc.stats[i], sc.xhat[i], sc.rstd[i])
            da = sc.none if i == 0 else sc.da[i - 1]  # the gradient at the layer below's output
            below = sc.xb if i == 0 else sc.act[i - 1]
            norm_backward(ns, gamma[i], keep, sc.da[i], n, sc.dh[i], dgamma[i], dbeta[i])
            linear_backward(sc.dh[i], below, n, w[i], dw[i], db[i], da, below)

    return linear_layers


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
