"""The convolutions' products with their outputs in registers: the same bits as ``conv``'s path.

:mod:`bnstudy.compiled.conv` states the arithmetic of a 3x3 convolution as ``im2col`` then
:func:`bnstudy.compiled.blocks.linear_t`, and its backward as
:func:`bnstudy.compiled.gradients.linear_backward` on the patches then ``col2im``. Those kernels
keep their outputs in memory, so every product added is a load and a store. The kernels here
compute every output exactly as those do — from the same start, the same products added one
after the other in the same order, each product rounded to float32 before it is added (plain
``fmul`` then ``fadd``, no fast-math flags: never a fused multiply-add) — while a tile of
outputs stays in 16-lane vector registers for the whole sum. The lanes are independent outputs;
no sum is reordered, split or reduced as a tree.

One product, :func:`gemm`: ``c[i, j] = s + a[i, idx[0]] * b[0, j] + a[i, idx[1]] * b[1, j] +
...`` added in ``t`` order, ``s`` the bias ``start[j]`` (mode :data:`BIAS`), zero (:data:`ZERO`)
or ``c[i, j]`` itself (:data:`MORE`: a sum continued, e.g. over a further block of rows; a
float32 held in memory between blocks is the float32 a register would hold). Tiles of 8 rows x
32 columns (16 registers), then 8 x 16, then single rows; the columns past the last multiple of
16 in the same tiles, their lanes padded (:func:`_narrow`).

The patches are held *offset-major* (:func:`im2col_offsets`): column ``k * C + c`` of a patch
row is column ``9 * c + k`` of ``conv.im2col``'s (``k = 3 * ky + kx``), so each offset's channels
are one contiguous copy of an input row. Only the layout changes, never an order:

- forward (:func:`conv_forward`): ``idx`` walks the patch row in ``conv``'s column order
  ``9 * c + k``, so each output is the bias plus the products in that order, as ``linear_t``;
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
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

from bnstudy.base.fixedmath import JIT

BIAS, ZERO, MORE = 0, 1, 2
_LANES = 16
_VEC = ir.VectorType(ir.FloatType(), _LANES)
# rows of patches whose weight gradients are summed per pass over the gradient's tiles (a block of
# patch rows, then the next, the sums carried in memory: their order is the rows' order)
ROW_BLOCK = 128
# rows of c per block of gemm's narrow columns (held 16 lanes wide in a buffer, then copied back)
NARROW_ROWS = 256
# floats of patches per chunk of examples (backprop runs each layer's kernels chunk by chunk)
CHUNK_FLOATS = 48 * 1024


class _F32x16(types.Type):
    """Sixteen float32 lanes held in a register (only inside compiled code)."""

    def __init__(self):
        super().__init__(name="f32x16")


f32x16 = _F32x16()


@register_model(_F32x16)
class _F32x16Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _VEC)


def _pointer(context, builder, aty, arr, indices):
    ary = context.make_array(aty)(context, builder, arr)
    ptr = cgutils.get_item_pointer(context, builder, aty, ary, indices, wraparound=False)
    return builder.bitcast(ptr, _VEC.as_pointer())


@intrinsic
def _load(typingctx, arr, i, j):
    """``arr[i, j : j + 16]`` of a float32 array whose rows are contiguous (no bounds check)."""

    def codegen(context, builder, sig, args):
        return builder.load(_pointer(context, builder, sig.args[0], args[0], [args[1], args[2]]), align=4, typ=_VEC)

    return f32x16(arr, i, j), codegen


@intrinsic
def _load1(typingctx, arr, j):
    """``arr[j : j + 16]`` of a contiguous float32 vector (no bounds check)."""

    def codegen(context, builder, sig, args):
        return builder.load(_pointer(context, builder, sig.args[0], args[0], [args[1]]), align=4, typ=_VEC)

    return f32x16(arr, j), codegen


@intrinsic
def _store(typingctx, arr, i, j, v):
    """``arr[i, j : j + 16] = v`` (no bounds check)."""

    def codegen(context, builder, sig, args):
        builder.store(args[3], _pointer(context, builder, sig.args[0], args[0], [args[1], args[2]]), align=4)
        return context.get_dummy_value()

    return types.none(arr, i, j, v), codegen


@intrinsic
def _splat(typingctx, x):
    """A float32 in every lane."""

    def codegen(context, builder, sig, args):
        first = builder.insert_element(ir.Constant(_VEC, ir.Undefined), args[0], ir.Constant(ir.IntType(32), 0))
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), _LANES), [0] * _LANES)
        return builder.shuffle_vector(first, ir.Constant(_VEC, ir.Undefined), zeros)

    return f32x16(types.float32), codegen


@intrinsic
def _add_product(typingctx, c, x, w):
    """``c + x * w`` in every lane: the product rounded to float32, then the sum."""

    def codegen(context, builder, sig, args):
        return builder.fadd(args[0], builder.fmul(args[1], args[2]))

    return f32x16(f32x16, f32x16, f32x16), codegen


@intrinsic
def _add(typingctx, c, x):
    """``c + x`` in every lane."""

    def codegen(context, builder, sig, args):
        return builder.fadd(args[0], args[1])

    return f32x16(f32x16, f32x16), codegen


@intrinsic
def _positive_or_zero(typingctx, v, m):
    """``v`` where ``m > 0``, else +0 (``m`` NaN: +0), lane by lane."""

    def codegen(context, builder, sig, args):
        zero = ir.Constant(_VEC, [0.0] * _LANES)
        return builder.select(builder.fcmp_ordered(">", args[1], zero), args[0], zero)

    return f32x16(f32x16, f32x16), codegen


@numba.njit(**JIT)
def _start(c, start, mode, i, j):
    if mode == BIAS:
        return _load1(start, j)
    if mode == ZERO:
        return _splat(np.float32(0))
    return _load(c, i, j)


@numba.njit(**JIT)
def _tile8x2(a, idx, b, start, c, mode, i, j):
    """Rows ``i .. i+7``, columns ``j .. j+31`` of :func:`gemm`."""
    j1 = j + 16
    c00, c01 = _start(c, start, mode, i, j), _start(c, start, mode, i, j1)
    c10, c11 = _start(c, start, mode, i + 1, j), _start(c, start, mode, i + 1, j1)
    c20, c21 = _start(c, start, mode, i + 2, j), _start(c, start, mode, i + 2, j1)
    c30, c31 = _start(c, start, mode, i + 3, j), _start(c, start, mode, i + 3, j1)
    c40, c41 = _start(c, start, mode, i + 4, j), _start(c, start, mode, i + 4, j1)
    c50, c51 = _start(c, start, mode, i + 5, j), _start(c, start, mode, i + 5, j1)
    c60, c61 = _start(c, start, mode, i + 6, j), _start(c, start, mode, i + 6, j1)
    c70, c71 = _start(c, start, mode, i + 7, j), _start(c, start, mode, i + 7, j1)
    for t in range(idx.shape[0]):
        k = idx[t]
        w0 = _load(b, t, j)
        w1 = _load(b, t, j1)
        x = _splat(a[i, k])
        c00 = _add_product(c00, x, w0)
        c01 = _add_product(c01, x, w1)
        x = _splat(a[i + 1, k])
        c10 = _add_product(c10, x, w0)
        c11 = _add_product(c11, x, w1)
        x = _splat(a[i + 2, k])
        c20 = _add_product(c20, x, w0)
        c21 = _add_product(c21, x, w1)
        x = _splat(a[i + 3, k])
        c30 = _add_product(c30, x, w0)
        c31 = _add_product(c31, x, w1)
        x = _splat(a[i + 4, k])
        c40 = _add_product(c40, x, w0)
        c41 = _add_product(c41, x, w1)
        x = _splat(a[i + 5, k])
        c50 = _add_product(c50, x, w0)
        c51 = _add_product(c51, x, w1)
        x = _splat(a[i + 6, k])
        c60 = _add_product(c60, x, w0)
        c61 = _add_product(c61, x, w1)
        x = _splat(a[i + 7, k])
        c70 = _add_product(c70, x, w0)
        c71 = _add_product(c71, x, w1)
    _store(c, i, j, c00)
    _store(c, i, j1, c01)
    _store(c, i + 1, j, c10)
    _store(c, i + 1, j1, c11)
    _store(c, i + 2, j, c20)
    _store(c, i + 2, j1, c21)
    _store(c, i + 3, j, c30)
    _store(c, i + 3, j1, c31)
    _store(c, i + 4, j, c40)
    _store(c, i + 4, j1, c41)
    _store(c, i + 5, j, c50)
    _store(c, i + 5, j1, c51)
    _store(c, i + 6, j, c60)
    _store(c, i + 6, j1, c61)
    _store(c, i + 7, j, c70)
    _store(c, i + 7, j1, c71)


@numba.njit(**JIT)
def _tile8x1(a, idx, b, start, c, mode, i, j):
    """Rows ``i .. i+7``, columns ``j .. j+15`` of :func:`gemm`."""
    c0, c1 = _start(c, start, mode, i, j), _start(c, start, mode, i + 1, j)
    c2, c3 = _start(c, start, mode, i + 2, j), _start(c, start, mode, i + 3, j)
    c4, c5 = _start(c, start, mode, i + 4, j), _start(c, start, mode, i + 5, j)
    c6, c7 = _start(c, start, mode, i + 6, j), _start(c, start, mode, i + 7, j)
    for t in range(idx.shape[0]):
        k = idx[t]
        w = _load(b, t, j)
        c0 = _add_product(c0, _splat(a[i, k]), w)
        c1 = _add_product(c1, _splat(a[i + 1, k]), w)
        c2 = _add_product(c2, _splat(a[i + 2, k]), w)
        c3 = _add_product(c3, _splat(a[i + 3, k]), w)
        c4 = _add_product(c4, _splat(a[i + 4, k]), w)
        c5 = _add_product(c5, _splat(a[i + 5, k]), w)
        c6 = _add_product(c6, _splat(a[i + 6, k]), w)
        c7 = _add_product(c7, _splat(a[i + 7, k]), w)
    _store(c, i, j, c0)
    _store(c, i + 1, j, c1)
    _store(c, i + 2, j, c2)
    _store(c, i + 3, j, c3)
    _store(c, i + 4, j, c4)
    _store(c, i + 5, j, c5)
    _store(c, i + 6, j, c6)
    _store(c, i + 7, j, c7)


@numba.njit(**JIT)
def _tile1x1(a, idx, b, start, c, mode, i, j):
    """Row ``i``, columns ``j .. j+15`` of :func:`gemm`."""
    c0 = _start(c, start, mode, i, j)
    for t in range(idx.shape[0]):
        c0 = _add_product(c0, _splat(a[i, idx[t]]), _load(b, t, j))
    _store(c, i, j, c0)


@numba.njit(**JIT)
def _rows(a, idx, b, start, c, mode, i, rows, j, n):
    """Rows ``i .. i+rows-1`` (8, or fewer at the end), columns ``j .. n-1`` (a multiple of 16 wide)."""
    if rows == 8:
        while j + 32 <= n:
            _tile8x2(a, idx, b, start, c, mode, i, j)
            j += 32
        if j < n:
            _tile8x1(a, idx, b, start, c, mode, i, j)
        return
    for r in range(i, i + rows):
        for jj in range(j, n, 16):
            _tile1x1(a, idx, b, start, c, mode, r, jj)


@numba.njit(**JIT)
def gemm(a, idx, b, start, c, mode, columns_outer=False):
    """``c[i, j] = s + a[i, idx[0]] * b[0, j] + a[i, idx[1]] * b[1, j] + ...``, added in that order
    (``s``: ``start[j]``, 0 or ``c[i, j]`` by ``mode``, :data:`BIAS`, :data:`ZERO`, :data:`MORE`),
    for ``c`` ``(m, n)``, ``b`` ``(len(idx), n)`` (both with contiguous rows), ``a`` any 2-D array.
    ``columns_outer``: all row tiles of a 32-column strip before the next strip (``b``'s strip stays
    in cache), else all strips of a row tile before the next (``a``'s rows stay in cache)."""
    m, n = c.shape
    if m == 0 or n == 0:
        return
    if c.strides[1] != 4 or (idx.shape[0] > 0 and b.strides[1] != 4) or (mode == BIAS and start.strides[0] != 4):
        raise ValueError("gemm needs b, c and start with consecutive float32 columns")
    vec = n - n % 16
    if vec > 0:
        if columns_outer:
            for j in range(0, vec, 32):
                for i in range(0, m, 8):
                    _rows(a, idx, b, start, c, mode, i, min(8, m - i), j, min(j + 32, vec))
        else:
            for i in range(0, m, 8):
                _rows(a, idx, b, start, c, mode, i, min(8, m - i), 0, vec)
    if vec < n:
        _narrow(a, idx, b, start, c, mode, vec)


@numba.njit(**JIT)
def _narrow(a, idx, b, start, c, mode, j0):
    """Columns ``j0 .. n-1`` of :func:`gemm` (fewer than 16, e.g. a layer of 8 channels) in 16-lane
    tiles: ``b``'s and ``start``'s columns copied into the first lanes of zero-padded copies, a block
    of :data:`NARROW_ROWS` rows of ``c`` computed into a padded buffer (its sums continued from
    ``c``'s values for :data:`MORE`) and its first lanes copied back. Each lane is one output, its
    products added in ``t`` order as everywhere in :func:`gemm`; the padding's lanes are discarded."""
    m, n = c.shape
    w = n - j0
    bp = np.zeros((idx.shape[0], _LANES), np.float32)
    for t in range(idx.shape[0]):
        for j in range(w):
            bp[t, j] = b[t, j0 + j]
    sp = np.zeros(_LANES, np.float32)
    if mode == BIAS:
        for j in range(w):
            sp[j] = start[j0 + j]
    cp = np.zeros((min(m, NARROW_ROWS), _LANES), np.float32)
    for i0 in range(0, m, NARROW_ROWS):
        r = min(NARROW_ROWS, m - i0)
        if mode == MORE:
            for i in range(r):
                for j in range(w):
                    cp[i, j] = c[i0 + i, j0 + j]
        block = a[i0 : i0 + r]
        for i in range(0, r, 8):
            _rows(block, idx, bp, sp, cp, mode, i, min(8, r - i), 0, _LANES)
        for i in range(r):
            for j in range(w):
                c[i0 + i, j0 + j] = cp[i, j]


@numba.njit(**JIT)
def column_order(channels):
    """``idx[9 * c + k] = k * channels + c``: where ``conv.im2col``'s column ``9 c + k`` lies in an
    offset-major patch row."""
    idx = np.empty(9 * channels, np.int64)
    for c in range(channels):
        for k in range(9):
            idx[9 * c + k] = k * channels + c
    return idx


@numba.njit(**JIT)
def im2col_offsets(a, n_ex, p_in, table, out):
    """Offset-major patches of ``a`` (``(n_ex * p_in, C)``) into ``out`` (``(n_ex * P_out, 9 * C)``):
    ``out[n * P_out + p, k * C + c]`` = ``a[n * p_in + table[p, k], c]``, or 0 outside the image."""
    c_ = a.shape[1]
    p_out = table.shape[0]
    for n in range(n_ex):
        base = n * p_in
        for p in range(p_out):
            row = out[n * p_out + p]
            if c_ == 1:
                for k in range(9):
                    s = table[p, k]
                    row[k] = a[base + s, 0] if s >= 0 else np.float32(0)
                continue
            for k in range(9):
                s = table[p, k]
                if s >= 0:
                    src = a[base + s]
                    for c in range(c_):
                        row[k * c_ + c] = src[c]
                else:
                    for c in range(c_):
                        row[k * c_ + c] = 0


@numba.njit(**JIT)
def conv_forward(patches, order, wt, bias, out):
    """The convolution's outputs ``out`` (``(rows, C_out)``) from offset-major ``patches``:
    ``linear_t`` of ``conv.im2col``'s patches, bit for bit (``order``: :func:`column_order`)."""
    gemm(patches, order, wt, bias, out, BIAS)


@numba.njit(**JIT)
def conv_forward_chunks(src, n, p_in, table, step, patches, order, wt, bias, out):
    """A convolution's outputs ``out`` (``(n * P_out, C_out)``) for ``n`` examples of ``src``, ``step``
    examples at a time (``patches`` holds a chunk's offset-major patches; each output's sum does not
    depend on the chunks): :func:`im2col_offsets` then :func:`conv_forward`."""
    p_out = table.shape[0]
    for n0 in range(0, n, step):
        m = min(step, n - n0)
        im2col_offsets(src[n0 * p_in : (n0 + m) * p_in], m, p_in, table, patches)
        conv_forward(patches[: m * p_out], order, wt, bias, out[n0 * p_out : (n0 + m) * p_out])


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


@numba.njit(**JIT)
def chunk_examples(p_out, width, bmax):
    """Examples per chunk of a layer's batch (``p_out`` patch rows of ``width`` floats each): about
    :data:`CHUNK_FLOATS` floats of patches, so that a chunk's patches and their gradients stay in
    the second-level cache between the kernels that write and read them."""
    return max(1, min(bmax, CHUNK_FLOATS // max(1, p_out * width)))


__all__ = [
    "BIAS",
    "CHUNK_FLOATS",
    "across_columns",
    "bias_grad_rows",
    "bias_grads",
    "chunk_examples",
    "col2im_add",
    "relu_mask",
    "weight_grad_buffer",
    "weight_grad_finish",
    "weight_grad_rows",
    "MORE",
    "ZERO",
    "col2im_offsets",
    "column_order",
    "conv_forward",
    "conv_forward_chunks",
    "conv_input_grad",
    "conv_weight_grads",
    "gemm",
    "im2col_offsets",
    "offsets_major",
]
