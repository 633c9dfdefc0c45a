"""The convolution's gradients with their sums in registers: the same bits as ``gradients``' path.

The backward counterpart of :mod:`bnstudy.compiled.convgemm` (same discipline: 16-lane registers of
:mod:`bnstudy.compiled.lanes`, the same products added one after the other in the same order, each
rounded to float32 before it is added, never a fused multiply-add), on the offset-major patches
(:func:`bnstudy.compiled.convgemm.im2col_offsets`):

- weight gradients (:func:`conv_weight_grads`): each ``dW[o, 9 c + k]`` is
  ``sum_rows dh[r, o] * patch[r, 9 c + k]``, rows in order from zero, as
  ``gradients.weight_grads``, computed in the offset-major layout then put in place;
  ``db[o]`` the rows of ``dh`` added in order from zero;
- input gradient (:func:`conv_input_grad`): ``sum_o dh[r, o] * W[o, 9 c + k]``, outputs in order
  from zero, as ``gradients.input_grad_row``, with ``W``'s columns in the offset-major layout;
- ``col2im`` (:func:`col2im_offsets`): each input position's channels receive the patch
  gradients copied from them, patch rows in order, within a row the offsets in order (the order
  of ``conv.col2im``), then the ReLU mask of the layer's input. ``linear_backward`` masks each
  patch entry by the patch (the input at the position it was copied from, 0 in the padding) before
  ``col2im``; every entry added into one position has that position's mask, so a masked position
  is the sum of zeros, +0, as it is here.
"""

from __future__ import annotations

import numba

from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.convgemm import MORE, ZERO, gemm
from bnstudy.compiled.lanes import _add, _add_product, _load, _positive_or_zero, _splat, _store

# rows of patches whose weight gradients are summed per pass over the gradient's tiles (a block of
# patch rows, then the next, the sums carried in memory: their order is the rows' order)
ROW_BLOCK = 128


@numba.njit(**JIT)
def offsets_major(w, channels, out):
    """``out[o, k * channels + c] = w[o, 9 * c + k]``: a weight matrix's columns offset-major."""
    for o in range(w.shape[0]):
        for c in range(channels):
            for k in range(9):
                out[o, k * channels + c] = w[o, 9 * c + k]


@numba.njit(**JIT)
def _rows8_into(dh, patches, i, g):
    """``g[o, :] += dh[i, o] * patches[i, :]``, then row ``i + 1``, ..., row ``i + 7``, for every
    ``o``: each ``g`` entry loaded once, its eight products added in row order, stored once; four
    outputs ``o`` at a time, so each patch vector loaded serves 32 products."""
    o_, k_ = g.shape
    o = 0
    while o < o_:
        four = o + 4 <= o_
        q1 = o + 1 if four else o
        q2 = o + 2 if four else o
        q3 = o + 3 if four else o
        for kv in range(0, k_, 16):
            x0, x1 = _load(patches, i, kv), _load(patches, i + 1, kv)
            x2, x3 = _load(patches, i + 2, kv), _load(patches, i + 3, kv)
            x4, x5 = _load(patches, i + 4, kv), _load(patches, i + 5, kv)
            x6, x7 = _load(patches, i + 6, kv), _load(patches, i + 7, kv)
            a = _load(g, o, kv)
            a = _add_product(a, _splat(dh[i, o]), x0)
            a = _add_product(a, _splat(dh[i + 1, o]), x1)
            a = _add_product(a, _splat(dh[i + 2, o]), x2)
            a = _add_product(a, _splat(dh[i + 3, o]), x3)
            a = _add_product(a, _splat(dh[i + 4, o]), x4)
            a = _add_product(a, _splat(dh[i + 5, o]), x5)
            a = _add_product(a, _splat(dh[i + 6, o]), x6)
            a = _add_product(a, _splat(dh[i + 7, o]), x7)
            if four:
                b = _load(g, q1, kv)
                b = _add_product(b, _splat(dh[i, q1]), x0)
                b = _add_product(b, _splat(dh[i + 1, q1]), x1)
                b = _add_product(b, _splat(dh[i + 2, q1]), x2)
                b = _add_product(b, _splat(dh[i + 3, q1]), x3)
                b = _add_product(b, _splat(dh[i + 4, q1]), x4)
                b = _add_product(b, _splat(dh[i + 5, q1]), x5)
                b = _add_product(b, _splat(dh[i + 6, q1]), x6)
                b = _add_product(b, _splat(dh[i + 7, q1]), x7)
                c = _load(g, q2, kv)
                c = _add_product(c, _splat(dh[i, q2]), x0)
                c = _add_product(c, _splat(dh[i + 1, q2]), x1)
                c = _add_product(c, _splat(dh[i + 2, q2]), x2)
                c = _add_product(c, _splat(dh[i + 3, q2]), x3)
                c = _add_product(c, _splat(dh[i + 4, q2]), x4)
                c = _add_product(c, _splat(dh[i + 5, q2]), x5)
                c = _add_product(c, _splat(dh[i + 6, q2]), x6)
                c = _add_product(c, _splat(dh[i + 7, q2]), x7)
                d = _load(g, q3, kv)
                d = _add_product(d, _splat(dh[i, q3]), x0)
                d = _add_product(d, _splat(dh[i + 1, q3]), x1)
                d = _add_product(d, _splat(dh[i + 2, q3]), x2)
                d = _add_product(d, _splat(dh[i + 3, q3]), x3)
                d = _add_product(d, _splat(dh[i + 4, q3]), x4)
                d = _add_product(d, _splat(dh[i + 5, q3]), x5)
                d = _add_product(d, _splat(dh[i + 6, q3]), x6)
                d = _add_product(d, _splat(dh[i + 7, q3]), x7)
                _store(g, q1, kv, b)
                _store(g, q2, kv, c)
                _store(g, q3, kv, d)
            _store(g, o, kv, a)
        o += 4 if four else 1


@numba.njit(**JIT)
def _row_into(dh, patches, i, g):
    """``g[o, :] += dh[i, o] * patches[i, :]`` for every ``o``."""
    o_, k_ = g.shape
    for o in range(o_):
        x = _splat(dh[i, o])
        for kv in range(0, k_, 16):
            _store(g, o, kv, _add_product(_load(g, o, kv), x, _load(patches, i, kv)))


@numba.njit(**JIT)
def across_columns(dw):
    """Whether :func:`weight_grad_rows` vectorises ``dw`` ``(O, 9 C)`` across its columns (they come
    in 16s, or the outputs do not), else across its outputs."""
    return dw.shape[1] % 16 == 0 or dw.shape[0] % 16 != 0


@numba.njit(**JIT)
def weight_grad_buffer(dw, buf):
    """The offset-major gradient's sums in ``buf`` (at least ``dw.size`` floats), zeroed: ``(O, 9 C)``,
    or ``(9 C, O)`` when vectorised across the outputs."""
    o_, k_ = dw.shape
    g = buf[: o_ * k_].reshape((o_, k_)) if across_columns(dw) else buf[: o_ * k_].reshape((k_, o_))
    g[:] = 0
    return g


@numba.njit(**JIT)
def weight_grad_rows(dh, patches, rows, across, g, ident):
    """Rows ``0 .. rows-1`` of ``dh`` and offset-major ``patches`` added into the sums ``g``
    (:func:`weight_grad_buffer`), row after row: ``g[o, j] += dh[r, o] * patches[r, j]``. When the
    patch columns come in 16s, eight rows at a time (each ``g`` entry loaded and stored once per
    eight rows, their products added in row order), else (``across`` false: ``g`` is ``(9 C, O)``,
    the first layer's 9 columns) :func:`gemm` over blocks of :data:`ROW_BLOCK` rows."""
    if across and g.shape[1] % 16 == 0:
        i = 0
        while i + 8 <= rows:
            _rows8_into(dh, patches, i, g)
            i += 8
        while i < rows:
            _row_into(dh, patches, i, g)
            i += 1
        return
    for r0 in range(0, rows, ROW_BLOCK):
        r1 = min(rows, r0 + ROW_BLOCK)
        if across:
            gemm(dh[r0:r1].T, ident[: r1 - r0], patches[r0:r1], g[0], g, MORE, True)
        else:
            gemm(patches[r0:r1].T, ident[: r1 - r0], dh[r0:r1], g[0], g, MORE, True)


@numba.njit(**JIT)
def weight_grad_finish(g, across, channels, dw):
    """``dw[o, 9 c + k]`` = the sum for offset-major column ``k * channels + c``."""
    for o in range(dw.shape[0]):
        for c in range(channels):
            for k in range(9):
                j = k * channels + c
                dw[o, 9 * c + k] = g[o, j] if across else g[j, o]


@numba.njit(**JIT)
def bias_grad_rows(dh, rows, db):
    """``db[o] += dh[r, o]``, rows ``r < rows`` in order."""
    for r in range(rows):
        for o in range(db.shape[0]):
            db[o] += dh[r, o]


@numba.njit(**JIT)
def bias_grads(dh, rows, db):
    """``db[o] = sum_r dh[r, o]``, rows ``r < rows`` in order from zero."""
    for o in range(db.shape[0]):
        db[o] = 0
    bias_grad_rows(dh, rows, db)


@numba.njit(**JIT)
def conv_weight_grads(dh, patches, rows, channels, dw, db, ident, buf):
    """``dw[o, 9 c + k] = sum_r dh[r, o] * patch[r, 9 c + k]`` and ``db[o] = sum_r dh[r, o]``, rows
    ``r < rows`` in order from zero (``gradients.weight_grads``' sums), from offset-major
    ``patches``: :func:`bias_grads`, :func:`weight_grad_buffer`, :func:`weight_grad_rows`,
    :func:`weight_grad_finish` (``ident``: ``0, 1, 2, ...``, at least :data:`ROW_BLOCK` long;
    ``buf``: at least ``dw.size`` floats of scratch)."""
    bias_grads(dh, rows, db)
    across = across_columns(dw)
    g = weight_grad_buffer(dw, buf)
    weight_grad_rows(dh, patches, rows, across, g, ident)
    weight_grad_finish(g, across, channels, dw)


@numba.njit(**JIT)
def conv_input_grad(dh, rows, w_offsets, ident, out):
    """``out[r, k * C + c] = sum_o dh[r, o] * W[o, 9 c + k]``, outputs ``o`` in order from zero, for
    rows ``r < rows`` (``w_offsets``: :func:`offsets_major` of ``W``; ``ident``: ``0, 1, 2, ...``):
    ``gradients.input_grad_row``'s sums, before the ReLU mask, offset-major."""
    gemm(dh[:rows], ident[: w_offsets.shape[0]], w_offsets, w_offsets[0], out[:rows], ZERO)


@numba.njit(**JIT)
def col2im_add(d, n_ex, p_in, table, out):
    """Each offset-major patch gradient of ``d`` added into the position of ``out`` (``(n_ex * p_in,
    C)``) it was copied from: patch rows in order, within a row the offsets in order."""
    c_ = out.shape[1]
    p_out = table.shape[0]
    vec = c_ - c_ % 16
    for n in range(n_ex):
        base = n * p_in
        for p in range(p_out):
            i = n * p_out + p
            for k in range(9):
                s = table[p, k]
                if s >= 0:
                    for c in range(0, vec, 16):
                        _store(out, base + s, c, _add(_load(out, base + s, c), _load(d, i, k * c_ + c)))
                    for c in range(vec, c_):
                        out[base + s, c] += d[i, k * c_ + c]


@numba.njit(**JIT)
def relu_mask(out, act, rows):
    """``out[r, c] = 0`` wherever ``act[r, c]`` is not positive, rows ``r < rows``."""
    c_ = out.shape[1]
    vec = c_ - c_ % 16
    for r in range(rows):
        for c in range(0, vec, 16):
            _store(out, r, c, _positive_or_zero(_load(out, r, c), _load(act, r, c)))
        for c in range(vec, c_):
            if not act[r, c] > 0:
                out[r, c] = 0


@numba.njit(**JIT)
def col2im_offsets(d, n_ex, p_in, table, act, out):
    """``conv.col2im`` of offset-major patch gradients ``d``, then the ReLU mask of the layer's input
    ``act``: ``out`` (``(n_ex * p_in, C)``) zeroed, :func:`col2im_add`, :func:`relu_mask` —
    :func:`bnstudy.compiled.gradients.linear_backward`'s mask then ``col2im``, bit for bit."""
    rows = n_ex * p_in
    for r in range(rows):
        for c in range(out.shape[1]):
            out[r, c] = 0
    col2im_add(d, n_ex, p_in, table, out)
    relu_mask(out, act, rows)
