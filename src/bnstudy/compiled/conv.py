"""The convolutional network's arithmetic, compiled, in one fixed order (one model).

The network (:mod:`bnstudy.nets.conv_train`) is a list of layers as data: each a 3x3
convolution (padding 1, stride 1 or 2) -> normaliser -> (optionally) the addition of an
earlier layer's output of the same shape (a residual connection) -> ReLU; then the
global average pool and a linear map. Its :class:`Geometry` holds, per layer, the
positions of its input and output and a *source table*: for each output position and
each of the 9 offsets of the 3x3 patch, the input position it reads, or -1 where the
patch falls outside the image (the padding). The tables are arrays computed in Python
(:func:`geometry`) and passed to the kernels; no image size is compiled in.

Activations are 2-D float32 arrays with one row per (example, position), examples in
order and within an example the positions in row-major order (``p = side * row +
column``), one column per channel. The discipline is :mod:`bnstudy.compiled.kernels`' (no
fast-math, no FMA, every reduction in the order stated here, vectorised only across
independent outputs), and every step reuses its kernels where it can:

- convolution = :func:`im2col` then :func:`bnstudy.compiled.blocks.linear_t`: the patch
  matrix has a row per (example, output position) and a column per ``(in channel, ky,
  kx)``, ``column = 9 * channel + 3 * ky + kx`` (PyTorch's weight layout ``(out, in, 3,
  3)`` flattened), holding the input at ``(stride * row + ky - 1, stride * column + kx -
  1)`` or 0 outside the image; so each output is the bias plus the products added in
  column order. Backward: :func:`bnstudy.compiled.gradients.linear_backward` on the patches,
  then :func:`col2im`, which adds each patch gradient into the input position it was
  copied from, patch rows in order and within a row columns in order;
- batch norm 2d = :mod:`bnstudy.compiled.kernels`' batch norm over the rows of a batch
  (statistics per channel over examples x positions, rows in order; the running
  variance's unbiased correction uses the ``B * P`` values, as PyTorch); batch renorm 2d
  the same statistics with the MLP's ``r`` and ``d`` per channel, clipped by the step's
  ``(rmax, dmax)`` (the run's schedule in training, its final limits in training-mode
  evaluation); ghost batch norm 2d batch norm 2d within consecutive virtual batches of
  ``g`` examples (``g * P`` rows; ``max(1, B // g)`` of them, the last taking the
  remainder), each moving the running statistics once, in order, its unbiased correction
  over its own ``g * P`` values (:func:`bnstudy.compiled.normkernels.spatial_settings`
  turns the kind's settings into rows);
- layer and group norm over (channels of a group x positions) per example
  (:func:`bnstudy.compiled.examplenorms.spatial_norm`, ``spatial_norm_backward``; every kind's
  form here is dispatched by ``normkernels.spatial_layer``, ``spatial_forward`` and
  ``spatial_backward``): groups of ``C / groups`` consecutive channels (layer norm: one
  group); per example and group, ``mean`` = (sum over positions in order, within a
  position the group's channels in order) / count, biased ``var`` the same sum of squared
  deviations / count, ``invstd = 1 / sqrt(var + eps)``, ``y = xhat * gamma[c] + beta[c]``;
  backward ``dh = invstd * (dxhat - sum(dxhat) / count - xhat * sum(dxhat * xhat) / count)``
  (same order), ``dgamma``/``dbeta`` summed over all rows in order;
- residual connection of layer ``l`` from layer ``k < l`` (:func:`add_relu`): ``a_l =
  relu(y_l + a_k)``, one addition per value (``y_l`` the normaliser's output). Backward
  (:mod:`bnstudy.compiled.convsteps`): the gradient at ``a_k`` is the input gradient of layer
  ``k + 1`` (:func:`col2im`), then plus the masked gradient at ``y_l`` of each later layer
  ``l`` that adds ``a_k``, ``l`` in increasing order, then ReLU's mask of ``a_k``;
- global average pool (:func:`average_pool`): per example and channel the positions'
  values added in order, divided by the positions; backward ``dz / P`` to every position
  (then the ReLU mask).
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from bnstudy.base.convlayers import out_side
from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.blocks import linear_t
from bnstudy.compiled.convgemm import chunk_examples, column_order, conv_forward_chunks
from bnstudy.compiled.normkernels import spatial_layer

Geometry = namedtuple("Geometry", "layers sources")
Geometry.__doc__ = """The convolutions' shapes: ``layers`` ``(L, 5)`` int64, per layer its input's positions,
its output's positions, the first row of its source table in ``sources``, the layer whose output it
adds before the ReLU (-1: none) and its stride; ``sources`` ``(sum of output positions, 9)`` int64,
every layer's table (:func:`source_table`) one after the other."""

# images per chunk of forward_model (a chunk's activations stay in the second-level cache)
CHUNK_IMAGES = 32

# the columns of Geometry.layers
P_IN, P_OUT, TABLE, SKIP, STRIDE = range(5)


def source_table(side: int, stride: int) -> np.ndarray:
    """``table[p, 3 * ky + kx]``: the input position the 3x3 patch of output position ``p`` reads at
    offset ``(ky - 1, kx - 1)`` from ``(stride * row, stride * column)``, or -1 outside the image."""
    o = out_side(side, stride)
    src = np.full((o * o, 9), -1, np.int64)
    for y in range(o):
        for x in range(o):
            for ky in range(3):
                for kx in range(3):
                    yy, xx = stride * y + ky - 1, stride * x + kx - 1
                    if 0 <= yy < side and 0 <= xx < side:
                        src[y * o + x, 3 * ky + kx] = yy * side + xx
    return src


def geometry(blocks) -> Geometry:
    """The :class:`Geometry` of the network's convolutions, read from its blocks
    (:class:`bnstudy.base.convlayers.Block`, placed on the images' side): block ``l`` adds the
    output of block ``skip`` (-1: none; it must be an earlier block of the same positions; the
    channels are checked by the network's spec)."""
    rows, tables, first, outs = [], [], 0, []
    for i, block in enumerate(blocks):
        stride, skip = int(block.stride), int(block.skip)
        if stride not in (1, 2):
            raise ValueError(f"layer {i}: stride {stride} is not 1 or 2")
        table = source_table(block.in_side, stride)
        if skip >= 0 and (skip >= i or outs[skip] != len(table)):
            raise ValueError(f"layer {i}: its skip {skip} is not an earlier layer of the same positions")
        rows.append((block.in_positions, len(table), first, skip, stride))
        tables.append(table)
        outs.append(len(table))
        first += len(table)
    return Geometry(np.array(rows, np.int64).reshape(-1, 5), np.concatenate(tables).reshape(-1, 9))


def no_geometry() -> Geometry:
    """The empty :class:`Geometry` of a network without convolutions (the MLP)."""
    return Geometry(np.zeros((0, 5), np.int64), np.zeros((0, 9), np.int64))


@numba.njit(**JIT)
def table_of(geo, layer):
    """Layer ``layer``'s source table (a view of ``geo.sources``)."""
    lo = geo.layers[layer, TABLE]
    return geo.sources[lo : lo + geo.layers[layer, P_OUT]]


@numba.njit(**JIT)
def im2col(a, n_ex, p_in, table, out):
    """Patches of ``a`` (``(n_ex * p_in, C)``) into ``out`` (``(n_ex * P_out, 9 * C)``, ``P_out`` the
    rows of ``table``), zero padded."""
    c_ = a.shape[1]
    p_out = table.shape[0]
    for n in range(n_ex):
        base = n * p_in
        for p in range(p_out):
            row = out[n * p_out + p]
            for c in range(c_):
                for k in range(9):
                    s = table[p, k]
                    row[9 * c + k] = a[base + s, c] if s >= 0 else np.float32(0)


@numba.njit(**JIT)
def col2im(d, n_ex, p_in, table, out):
    """The input gradient ``out`` (``(n_ex * p_in, C)``) from patch gradients ``d`` (``(n_ex *
    P_out, 9 * C)``): zeroed, then each patch entry added into the position it was copied from,
    patch rows in order, within a row columns in order."""
    c_ = out.shape[1]
    p_out = table.shape[0]
    for r in range(n_ex * p_in):
        for c in range(c_):
            out[r, c] = 0
    for n in range(n_ex):
        base = n * p_in
        for p in range(p_out):
            row = d[n * p_out + p]
            for c in range(c_):
                for k in range(9):
                    s = table[p, k]
                    if s >= 0:
                        out[base + s, c] += row[9 * c + k]


@numba.njit(**JIT)
def add_relu(out, skip, rows):
    """``out = relu(out + skip)`` on rows ``0 .. rows-1``: the residual connection."""
    for r in range(rows):
        for c in range(out.shape[1]):
            y = out[r, c] + skip[r, c]
            out[r, c] = y if y > 0 else np.float32(0)


@numba.njit(**JIT)
def average_pool(a, n_ex, positions, out):
    """``out[n, c]`` = (sum of ``a``'s ``positions`` rows of example ``n`` in order) / ``positions``."""
    c_ = a.shape[1]
    for n in range(n_ex):
        for c in range(c_):
            out[n, c] = 0
        for p in range(positions):
            for c in range(c_):
                out[n, c] += a[n * positions + p, c]
        for c in range(c_):
            out[n, c] = out[n, c] / np.float32(positions)


@numba.njit(**JIT)
def layer_input(hid, geo, layer, a, n_ex, pre):
    """Convolution ``layer`` of :func:`forward_model`: its normaliser's input rows ``pre`` (``(n_ex *
    P_out, C_out)``) from the layer's input ``a`` (``(n_ex * P_in, C_in)``), ``hid`` the layer's
    :class:`bnstudy.compiled.kernels.Hidden`. The sums of :func:`im2col` then
    :func:`bnstudy.compiled.blocks.linear_t`, bit for bit, computed as the training step computes
    them (``convsteps.conv_layer_forward``): offset-major patches of a chunk of examples at a time
    (:func:`bnstudy.compiled.convgemm.chunk_examples`; an output's sum does not depend on the
    chunks), their product with the outputs held in registers: the kernel both share,
    :func:`bnstudy.compiled.convgemm.conv_forward_chunks`."""
    p_out, width = geo.layers[layer, P_OUT], hid.wt.shape[0]
    step = chunk_examples(p_out, width, max(1, n_ex))
    patches = np.empty((step * p_out, width), np.float32)
    table = table_of(geo, layer)
    conv_forward_chunks(
        a, n_ex, geo.layers[layer, P_IN], table, step, patches, column_order(width // 9), hid.wt, hid.bias, pre
    )


@numba.njit(**JIT)
def layer_output(ns, lp, geo, layer, pre, skip_act, n_ex, batch, train, out):
    """The rest of convolution ``layer`` of :func:`forward_model`: its normaliser (parameters and
    running statistics ``lp``) on ``pre``, training mode on consecutive batches of ``batch``
    examples or inference mode, then the ReLU, after adding ``skip_act`` (the output of the layer
    it adds; ignored without one) if it has a residual connection (:func:`add_relu`)."""
    skip = geo.layers[layer, SKIP]
    spatial_layer(ns, lp, pre, n_ex, geo.layers[layer, P_OUT], batch, train, skip < 0, out)
    if skip >= 0:
        add_relu(out, skip_act, pre.shape[0])


@numba.njit(**JIT)
def forward_model(net, geo, ns, x, n_ex, batch, train, logits):
    """One model's logits for ``n_ex`` images ``x`` (``(n_ex * P, C_in)``): inference mode, or
    training mode on consecutive batches of ``batch`` images (running statistics read-only).

    ``net`` is a :class:`bnstudy.compiled.kernels.Net` whose hidden layers are 3x3 convolutions (``W^T``
    ``(9 * C_in, C_out)``) of :class:`Geometry` ``geo``, its output layer the linear map after the
    average pool; ``ns`` its normaliser's settings (:class:`bnstudy.compiled.normkernels.Settings`).

    The images go through the whole network :data:`CHUNK_IMAGES` at a time (in training mode a
    whole number of batches at a time), so that the activations stay in cache: an image's logits
    depend on no other image but its batch's, which a chunk holds whole."""
    per = batch if train else 1
    step = max(per, (CHUNK_IMAGES // per) * per)
    p_in = geo.layers[0, P_IN]
    for n0 in range(0, n_ex, step):
        m = min(step, n_ex - n0)
        _forward_chunk(net, geo, ns, x[n0 * p_in : (n0 + m) * p_in], m, batch, train, logits[n0 : n0 + m])


@numba.njit(**JIT)
def _forward_chunk(net, geo, ns, x, n_ex, batch, train, logits):
    """:func:`forward_model` of ``n_ex`` images (in training mode a whole number of batches)."""
    acts = []
    a = x
    for layer in range(len(net.hidden)):
        hid = net.hidden[layer]
        rows = n_ex * geo.layers[layer, P_OUT]
        pre = np.empty((rows, hid.wt.shape[1]), np.float32)
        out = np.empty((rows, hid.wt.shape[1]), np.float32)
        layer_input(hid, geo, layer, a, n_ex, pre)
        skip = geo.layers[layer, SKIP]
        layer_output(ns, hid.norm, geo, layer, pre, acts[skip] if skip >= 0 else out, n_ex, batch, train, out)
        acts.append(out)
        a = out
    pooled = np.empty((n_ex, a.shape[1]), np.float32)
    average_pool(a, n_ex, geo.layers[len(net.hidden) - 1, P_OUT], pooled)
    linear_t(pooled, net.wt, net.bias, logits)


@numba.njit(**JIT)
def batch_labels(net, geo, ns, x, batches, out):
    """Training-mode label of row 0 of every batch: for each ``k`` in order, the images
    ``batches[k, 0 .. b-1]`` of ``x`` (``(N * P, C_in)``) copied, in that order, into one batch of
    ``b`` images, :func:`forward_model` in training mode on it (running statistics read, never
    written), and ``out[k]`` = the first largest logit of its image 0 (``argmax_rows``' rule). So
    each label is, bit for bit, row 0's of ``conv_train.logits(..., train=True, batch=b)`` on
    that batch."""
    p = geo.layers[0, P_IN]
    b = batches.shape[1]
    xb = np.empty((b * p, x.shape[1]), np.float32)
    z = np.empty((b, net.wt.shape[1]), np.float32)
    for k in range(batches.shape[0]):
        for j in range(b):
            src = batches[k, j] * p
            for q in range(p):
                for c in range(x.shape[1]):
                    xb[j * p + q, c] = x[src + q, c]
        forward_model(net, geo, ns, xb, b, b, True, z)
        best = 0
        for c in range(1, z.shape[1]):
            if z[0, c] > z[0, best]:
                best = c
        out[k] = best
