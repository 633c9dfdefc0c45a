"""The training step's passes of both network families, each family's code chosen by the arch's type.

What :func:`bnstudy.compiled.backprop.train_run` (and ``serve_run``) call once per batch, on the
records of :mod:`bnstudy.compiled.backprop`: the parameters' views (:func:`param_views`, the flat
vector cut layer after layer), the scratch arrays of a run (:func:`new_scratch`), the batch gathered
(:func:`gather`), then

1. forward, training mode, layer after layer (:func:`forward_pass`):
   :func:`bnstudy.compiled.blocks.linear_t`'s sums (:func:`linear_forward`: by
   :func:`bnstudy.compiled.convgemm.gemm` where the layer's outputs come in 16s; a convolution: its
   arithmetic, ``conv.im2col`` then ``linear_t``, by :mod:`bnstudy.compiled.convgemm`'s
   register-tiled kernels, chunk by chunk of examples:
   :func:`bnstudy.compiled.convsteps.conv_layer_forward`) and the normaliser and ReLU
   (:func:`bnstudy.compiled.gradients.norm_forward`, or its per-image form
   :func:`bnstudy.compiled.normkernels.spatial_forward`), which keeps what backward needs and moves
   the running statistics;
2. backward from the gradient at the logits, output layer first (:func:`backward_pass`:
   :func:`bnstudy.compiled.gradients.linear_backward`'s sums, by ``gemm`` too where the layer's inputs
   come in 16s (:func:`linear_grads`), :func:`bnstudy.compiled.gradients.norm_backward`;
   a convolution's sums those of ``linear_backward`` on its patches then ``conv.col2im``, by
   :mod:`bnstudy.compiled.convgrads`, :func:`bnstudy.compiled.convsteps.conv_backward`), into a
   gradient vector laid out as the parameters.

The family is the arch's type (:class:`bnstudy.compiled.backprop.ConvArch` or ``Arch``): the
functions with overloads below are plain Python for Python callers and, in compiled code, the
overload for the arch's type, so the MLP's type never sees the convolutions' code.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np
from numba.extending import overload

from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.batchstats import new_stats
from bnstudy.compiled.blocks import linear_t, transpose_into
from bnstudy.compiled.bytype import typed_from
from bnstudy.compiled.conv import P_IN, P_OUT, SKIP, add_relu, average_pool
from bnstudy.compiled.convgemm import BIAS, chunk_examples, column_order, gemm
from bnstudy.compiled.convgrads import ROW_BLOCK, bias_grads, relu_mask
from bnstudy.compiled.convsteps import conv_backward, conv_layer_forward, unpool
from bnstudy.compiled.gradients import linear_backward, norm_backward, norm_forward
from bnstudy.compiled.normkernels import Keep, Params, rstd_scratch, spatial_forward

# ---- the network's parts ----------------------------------------------------------------

Scratch = namedtuple(
    "Scratch",
    "xb yb wt patches dpatches pre act xhat da dh rstd stats pooled dpooled ones z dz none order woff ident gbuf chunk",
)


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
    from bnstudy.compiled.backprop import ConvArch  # the records' module imports this one: read when compiling

    return getattr(arch_type, "instance_class", None) is ConvArch


def is_conv(arch) -> bool:
    """Whether ``arch`` is the convolutional network's (in compiled code a constant of its type)."""
    from bnstudy.compiled.backprop import ConvArch  # the records' module imports this one

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


@typed_from(2)
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
        np.arange(max(ROW_BLOCK, np.max(shapes), bmax)),
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
        linear_forward(src, n, sc.wt[i], bias, sc.pre[i])
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
        linear_forward(src, n, sc.wt[hidden], bias, sc.z)

    return linear


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
        linear_grads(sc.dz, top, n, w[hidden], dw[hidden], db[hidden], sc.da[hidden - 1])
        for i in range(hidden - 1, -1, -1):
            keep = Keep(sc.stats[i], sc.xhat[i], sc.rstd[i])
            da = sc.none if i == 0 else sc.da[i - 1]  # the gradient at the layer below's output
            below = sc.xb if i == 0 else sc.act[i - 1]
            norm_backward(ns, gamma[i], keep, sc.da[i], n, sc.dh[i], dgamma[i], dbeta[i])
            linear_grads(sc.dh[i], below, n, w[i], dw[i], db[i], da)

    return linear_layers


# ---- the MLP's linear maps in the training step ------------------------------------------
# blocks.linear_t and gradients.linear_backward state the arithmetic; where the columns written come
# in 16s, convgemm.gemm computes the same sums (the same start, the same products added in the same
# order) with a tile of them held in registers, not loaded and stored per product. The digits MLP's
# three layers, forward and backward, at batch 64: 169 us against 336 (batch 16: 44 against 88;
# batch 2: 15 against 17), the same bits.


@numba.njit(**JIT)
def linear_forward(a, n, wt, bias, out):
    """``out[:n] = bias + a[:n] @ wt``: :func:`bnstudy.compiled.blocks.linear_t`'s sums (gemm reads
    ``a``'s columns in place: no index array)."""
    if wt.shape[1] % 16 == 0:
        gemm(a[:n], None, wt, bias, out[:n], BIAS)
    else:
        linear_t(a[:n], wt, bias, out)


@numba.njit(**JIT)
def linear_grads(dh, a, n, w, dw, db, da):
    """:func:`bnstudy.compiled.gradients.linear_backward` of ``h = a W^T + b`` for rows ``0 .. n-1``,
    the ReLU mask of ``a`` itself on ``da``: its sums, each from zero in the same order (the weight
    gradient's over rows, the input gradient's over outputs)."""
    o_, k_ = w.shape
    if k_ % 16 != 0:
        linear_backward(dh, a, n, w, dw, db, da, a)
        return
    bias_grads(dh, n, db)
    # every sum from a start of +0 (linear_backward's zeroed outputs), as gemm's bias: the three
    # products of the step and the probes' then share gemm's one compiled specialisation
    zeros = np.zeros(k_, np.float32)
    dht = np.empty((o_, n), np.float32)  # dh^T, contiguous: the weight gradient's rows are dh's columns
    transpose_into(dh[:n], dht)
    gemm(dht, None, a[:n], zeros, dw, BIAS)
    if da.shape[1] == 0:
        return
    gemm(dh[:n], None, w, zeros, da[:n], BIAS)
    relu_mask(da, a, n)
