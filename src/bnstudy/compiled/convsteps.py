"""A convolutional layer's part of the training step: its forward chunk by chunk, its backward with residual gradients.

The convolutional family's layer kernels that :mod:`bnstudy.compiled.passes` chains into the
forward and backward passes: a convolution's outputs from offset-major patches made a chunk of
examples at a time (:func:`conv_layer_forward`), the average pool's backward (:func:`unpool`), the
gradients a layer's output receives from the later layers that add it (:func:`gather_skips`), and a
layer's whole backward (:func:`conv_backward`): normaliser, weight gradients and input gradient,
chunk by chunk, by the register-tiled kernels of :mod:`bnstudy.compiled.convgemm` and
:mod:`bnstudy.compiled.convgrads` (every sum in the order of :mod:`bnstudy.compiled.conv`'s path).
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.conv import P_IN, P_OUT, SKIP, table_of
from bnstudy.compiled.convgemm import conv_forward_chunks, im2col_offsets
from bnstudy.compiled.convgrads import (
    across_columns,
    bias_grad_rows,
    col2im_add,
    conv_input_grad,
    offsets_major,
    relu_mask,
    weight_grad_buffer,
    weight_grad_finish,
    weight_grad_rows,
)
from bnstudy.compiled.normkernels import Keep, spatial_backward


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
