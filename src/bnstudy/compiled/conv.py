"""The small convolutional network's arithmetic, compiled, in one fixed order (one model).

The network (:mod:`bnstudy.nets.conv_train`) reads a digit as an 8x8 image of one
channel: conv 3x3 (padding 1) -> normaliser -> ReLU -> conv 3x3 (padding 1) ->
normaliser -> ReLU -> global average pool -> linear. Activations are 2-D float32
arrays with one row per (example, position), examples in order and within an
example the ``P = 64`` positions in row-major order (``p = 8 * row + column``),
one column per channel. The discipline is :mod:`bnstudy.compiled.kernels`' (no fast-math,
no FMA, every reduction in the order stated here, vectorised only across
independent outputs), and every step reuses its kernels where it can:

- convolution = :func:`im2col` then :func:`bnstudy.compiled.blocks.linear_t`: the patch
  matrix has a row per (example, position) and a column per ``(in channel, ky,
  kx)``, ``column = 9 * channel + 3 * ky + kx`` (PyTorch's weight layout
  ``(out, in, 3, 3)`` flattened), holding the input at ``(row + ky - 1, column +
  kx - 1)`` or 0 outside the image; so each output is the bias plus the products
  added in column order. Backward: :func:`bnstudy.compiled.gradients.linear_backward` on
  the patches, then :func:`col2im`, which adds each patch gradient into the input
  position it was copied from, patch rows in order and within a row columns in order;
- batch norm 2d = :mod:`bnstudy.compiled.kernels`' batch norm over the rows of a batch
  (statistics per channel over examples x positions, rows in order; the running
  variance's unbiased correction uses the ``B * P`` values, as PyTorch);
- layer and group norm over (channels of a group x positions) per example
  (:func:`bnstudy.compiled.normkernels.spatial_norm`, ``spatial_norm_backward``; every kind's
  form here is dispatched by ``normkernels.spatial_layer``, ``spatial_forward`` and
  ``spatial_backward``): groups of ``C / groups``
  consecutive channels (layer norm: one group); per example and group, ``mean``
  = (sum over positions in order, within a position the group's channels in
  order) / count, biased ``var`` the same sum of squared deviations / count,
  ``invstd = 1 / sqrt(var + eps)``, ``y = xhat * gamma[c] + beta[c]``; backward
  ``dh = invstd * (dxhat - sum(dxhat) / count - xhat * sum(dxhat * xhat) / count)``
  (same order), ``dgamma``/``dbeta`` summed over all rows in order;
- global average pool (:func:`average_pool`): per example and channel the
  positions' values added in order, divided by ``P``; backward ``dz / P`` to every
  position (then the ReLU mask).
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.designs import CONV_POSITIONS, CONV_SIDE
from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.blocks import linear_t
from bnstudy.compiled.normkernels import spatial_layer

SIDE = CONV_SIDE
P = CONV_POSITIONS  # positions per image


def _sources() -> np.ndarray:
    """``SOURCE[p, 3 * ky + kx]``: the position a 3x3 patch centred on position ``p`` reads
    at offset ``(ky - 1, kx - 1)``, or -1 where that falls outside the image (padding)."""
    src = np.full((P, 9), -1, np.int64)
    for y in range(SIDE):
        for x in range(SIDE):
            for ky in range(3):
                for kx in range(3):
                    yy, xx = y + ky - 1, x + kx - 1
                    if 0 <= yy < SIDE and 0 <= xx < SIDE:
                        src[y * SIDE + x, 3 * ky + kx] = yy * SIDE + xx
    return src


SOURCE = _sources()


@numba.njit(**JIT)
def im2col(a, n_ex, out):
    """Patches of ``a`` (``(n_ex * P, C)``) into ``out`` (``(n_ex * P, 9 * C)``), zero padded."""
    c_ = a.shape[1]
    for n in range(n_ex):
        base = n * P
        for p in range(P):
            for c in range(c_):
                for k in range(9):
                    s = SOURCE[p, k]
                    out[base + p, 9 * c + k] = a[base + s, c] if s >= 0 else np.float32(0)


@numba.njit(**JIT)
def col2im(d, n_ex, out):
    """The input gradient ``out`` (``(n_ex * P, C)``) from patch gradients ``d``
    (``(n_ex * P, 9 * C)``): zeroed, then each patch entry added into the position it
    was copied from, patch rows in order, within a row columns in order."""
    c_ = out.shape[1]
    for r in range(n_ex * P):
        for c in range(c_):
            out[r, c] = 0
    for n in range(n_ex):
        base = n * P
        for p in range(P):
            for c in range(c_):
                for k in range(9):
                    s = SOURCE[p, k]
                    if s >= 0:
                        out[base + s, c] += d[base + p, 9 * c + k]


@numba.njit(**JIT)
def average_pool(a, n_ex, out):
    """``out[n, c]`` = (sum of ``a``'s positions of example ``n`` in order) / ``P``."""
    c_ = a.shape[1]
    for n in range(n_ex):
        for c in range(c_):
            out[n, c] = 0
        for p in range(P):
            for c in range(c_):
                out[n, c] += a[n * P + p, c]
        for c in range(c_):
            out[n, c] = out[n, c] / np.float32(P)


@numba.njit(**JIT)
def forward_model(net, ns, x, n_ex, batch, train, logits):
    """One model's logits for ``n_ex`` images ``x`` (``(n_ex * P, 1)``): inference mode, or
    training mode on consecutive batches of ``batch`` images (running statistics read-only).

    ``net`` is a :class:`bnstudy.compiled.kernels.Net` whose hidden layers are 3x3 convolutions (``W^T``
    ``(9 * C_in, C_out)``), its output layer the linear map after the average pool; ``ns`` its
    normaliser's settings (:class:`bnstudy.compiled.normkernels.Settings`)."""
    rows = n_ex * P
    a = x
    for layer in range(len(net.hidden)):
        hid = net.hidden[layer]
        patches = np.empty((rows, hid.wt.shape[0]), np.float32)
        pre = np.empty((rows, hid.wt.shape[1]), np.float32)
        out = np.empty((rows, hid.wt.shape[1]), np.float32)
        im2col(a, n_ex, patches)
        linear_t(patches, hid.wt, hid.bias, pre)
        spatial_layer(ns, hid.norm, pre, n_ex, batch, train, out)
        a = out
    pooled = np.empty((n_ex, a.shape[1]), np.float32)
    average_pool(a, n_ex, pooled)
    linear_t(pooled, net.wt, net.bias, logits)


@numba.njit(**JIT)
def pair_labels(net, ns, x, pairs, out):
    """Training-mode label of image ``pairs[k, 0]`` of ``x`` (``(N * P, 1)``) in a batch of two
    with image ``pairs[k, 1]`` (first largest logit), for every ``k`` in order."""
    xb = np.empty((2 * P, 1), np.float32)
    z = np.empty((2, net.wt.shape[1]), np.float32)
    for k in range(pairs.shape[0]):
        for j in range(2):
            src = pairs[k, j] * P
            for q in range(P):
                xb[j * P + q, 0] = x[src + q, 0]
        forward_model(net, ns, xb, 2, 2, True, z)
        best = 0
        for c in range(1, z.shape[1]):
            if z[0, c] > z[0, best]:
                best = c
        out[k] = best
