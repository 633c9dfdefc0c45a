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
32 columns (16 registers), then 8 x 16, on a target with AVX-512's 32 vector registers; of 4 rows
x 16 columns on one with 16 (:data:`bnstudy.compiled.lanes.TILE_ROWS`); then single rows (64
columns, then 16); the columns past the last multiple of 16 in the same tiles, their lanes padded
(:func:`_narrow`).

The patches are held *offset-major* (:func:`im2col_offsets`): column ``k * C + c`` of a patch
row is column ``9 * c + k`` of ``conv.im2col``'s (``k = 3 * ky + kx``), so each offset's channels
are one contiguous copy of an input row. Only the layout changes, never an order: in the
forward (:func:`conv_forward`), ``idx`` walks the patch row in ``conv``'s column order
``9 * c + k``, so each output is the bias plus the products in that order, as ``linear_t``.

The gradients' kernels, in the same discipline and the same layout, are
:mod:`bnstudy.compiled.convgrads`; the register type and its operations, :mod:`bnstudy.compiled.lanes`.
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.bytype import typed_from
from bnstudy.compiled.lanes import _LANES, TILE_ROWS, _add_product, _load, _load1, _splat, _store

BIAS, ZERO, MORE = 0, 1, 2
# rows of c per block of gemm's narrow columns (held 16 lanes wide in a buffer, then copied back)
NARROW_ROWS = 256
# floats of patches per chunk of examples (backprop runs each layer's kernels chunk by chunk)
CHUNK_FLOATS = 48 * 1024


@numba.njit(**JIT)
def _products(idx, b):
    """How many products each output of :func:`gemm` adds: ``idx``'s length, or ``b``'s rows (``idx`` None)."""
    if idx is None:
        return b.shape[0]
    return idx.shape[0]


@numba.njit(**JIT)
def _column(idx, t):
    """The column of ``a`` whose value multiplies ``b``'s row ``t``: ``idx[t]``, or ``t`` (``idx`` None;
    a separate compile, with no index array to load)."""
    if idx is None:
        return t
    return idx[t]


@typed_from(3)
@numba.njit(**JIT)
def _start(c, start, mode, i, j):
    if mode == BIAS:
        return _load1(start, j)
    if mode == ZERO:
        return _splat(np.float32(0))
    return _load(c, i, j)


@typed_from(6)
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
    for t in range(_products(idx, b)):
        k = _column(idx, t)
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


@typed_from(6)
@numba.njit(**JIT)
def _tile8x1(a, idx, b, start, c, mode, i, j):
    """Rows ``i .. i+7``, columns ``j .. j+15`` of :func:`gemm`."""
    c0, c1 = _start(c, start, mode, i, j), _start(c, start, mode, i + 1, j)
    c2, c3 = _start(c, start, mode, i + 2, j), _start(c, start, mode, i + 3, j)
    c4, c5 = _start(c, start, mode, i + 4, j), _start(c, start, mode, i + 5, j)
    c6, c7 = _start(c, start, mode, i + 6, j), _start(c, start, mode, i + 7, j)
    for t in range(_products(idx, b)):
        k = _column(idx, t)
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


@typed_from(6)
@numba.njit(**JIT)
def _tile4x1(a, idx, b, start, c, mode, i, j):
    """Rows ``i .. i+3``, columns ``j .. j+15`` of :func:`gemm` (the tile of a target with 16 vector
    registers, :data:`bnstudy.compiled.lanes.TILE_ROWS`)."""
    c0, c1 = _start(c, start, mode, i, j), _start(c, start, mode, i + 1, j)
    c2, c3 = _start(c, start, mode, i + 2, j), _start(c, start, mode, i + 3, j)
    for t in range(_products(idx, b)):
        k = _column(idx, t)
        w = _load(b, t, j)
        c0 = _add_product(c0, _splat(a[i, k]), w)
        c1 = _add_product(c1, _splat(a[i + 1, k]), w)
        c2 = _add_product(c2, _splat(a[i + 2, k]), w)
        c3 = _add_product(c3, _splat(a[i + 3, k]), w)
    _store(c, i, j, c0)
    _store(c, i + 1, j, c1)
    _store(c, i + 2, j, c2)
    _store(c, i + 3, j, c3)


@typed_from(6)
@numba.njit(**JIT)
def _tile1x4(a, idx, b, start, c, mode, i, j):
    """Row ``i``, columns ``j .. j+63`` of :func:`gemm`: four independent sums per product of ``a``,
    so a few rows (a small batch) are not held up by one sum's chain of additions."""
    c0, c1 = _start(c, start, mode, i, j), _start(c, start, mode, i, j + 16)
    c2, c3 = _start(c, start, mode, i, j + 32), _start(c, start, mode, i, j + 48)
    for t in range(_products(idx, b)):
        x = _splat(a[i, _column(idx, t)])
        c0 = _add_product(c0, x, _load(b, t, j))
        c1 = _add_product(c1, x, _load(b, t, j + 16))
        c2 = _add_product(c2, x, _load(b, t, j + 32))
        c3 = _add_product(c3, x, _load(b, t, j + 48))
    _store(c, i, j, c0)
    _store(c, i, j + 16, c1)
    _store(c, i, j + 32, c2)
    _store(c, i, j + 48, c3)


@typed_from(6)
@numba.njit(**JIT)
def _tile1x1(a, idx, b, start, c, mode, i, j):
    """Row ``i``, columns ``j .. j+15`` of :func:`gemm`."""
    c0 = _start(c, start, mode, i, j)
    for t in range(_products(idx, b)):
        c0 = _add_product(c0, _splat(a[i, _column(idx, t)]), _load(b, t, j))
    _store(c, i, j, c0)


@typed_from(6)
@numba.njit(**JIT)
def _rows(a, idx, b, start, c, mode, i, rows, j, n):
    """Rows ``i .. i+rows-1`` (a tile of 8 or 4, or fewer at the end), columns ``j .. n-1`` (a
    multiple of 16 wide)."""
    if rows == 8:
        while j + 32 <= n:
            _tile8x2(a, idx, b, start, c, mode, i, j)
            j += 32
        if j < n:
            _tile8x1(a, idx, b, start, c, mode, i, j)
        return
    if rows == 4:
        while j < n:
            _tile4x1(a, idx, b, start, c, mode, i, j)
            j += 16
        return
    for r in range(i, i + rows):
        jj = j
        while jj + 64 <= n:
            _tile1x4(a, idx, b, start, c, mode, r, jj)
            jj += 64
        while jj < n:
            _tile1x1(a, idx, b, start, c, mode, r, jj)
            jj += 16


@numba.njit(**JIT)
def gemm(a, idx, b, start, c, mode, columns_outer=False, tile_rows=TILE_ROWS):
    """``c[i, j] = s + a[i, idx[0]] * b[0, j] + a[i, idx[1]] * b[1, j] + ...``, added in that order
    (``s``: ``start[j]``, 0 or ``c[i, j]`` by ``mode``, :data:`BIAS`, :data:`ZERO`, :data:`MORE`),
    for ``c`` ``(m, n)``, ``b`` ``(len(idx), n)`` (both with contiguous rows), ``a`` any 2-D array.
    ``idx`` None: ``a``'s columns ``0, 1, 2, ...`` read in place, ``b`` ``(k, n)`` (a Linear layer; its own
    compile, without the index array's loads: the MLP's training step 8-16% less CPU at batches 2 and 64
    natively, 4-10% as the AVX2 machine, one example's companion design 10% and 3%; docs/speed.md).
    ``columns_outer``: all row tiles of a 32-column strip before the next strip (``b``'s strip stays
    in cache), else all strips of a row tile before the next (``a``'s rows stay in cache).
    ``tile_rows``: 8 or 4, the rows of a tile (default: the target's, :data:`bnstudy.compiled.lanes.TILE_ROWS`;
    the tests run both); any height gives the same bits."""
    m, n = c.shape
    if m == 0 or n == 0:
        return
    if c.strides[1] != 4 or (_products(idx, b) > 0 and b.strides[1] != 4) or (mode == BIAS and start.strides[0] != 4):
        raise ValueError("gemm needs b, c and start with consecutive float32 columns")
    if idx is None and a.shape[1] < b.shape[0]:
        raise ValueError("gemm without an index array needs a with at least as many columns as b has rows")
    vec = n - n % 16
    if vec > 0:
        if columns_outer:
            for j in range(0, vec, 32):
                for i in range(0, m, tile_rows):
                    _rows(a, idx, b, start, c, mode, i, min(tile_rows, m - i), j, min(j + 32, vec))
        else:
            for i in range(0, m, tile_rows):
                _rows(a, idx, b, start, c, mode, i, min(tile_rows, m - i), 0, vec)
    if vec < n:
        _narrow(a, idx, b, start, c, mode, vec, tile_rows)


@typed_from(6)
@numba.njit(**JIT)
def _narrow(a, idx, b, start, c, mode, j0, tile_rows):
    """Columns ``j0 .. n-1`` of :func:`gemm` (fewer than 16, e.g. a layer of 8 channels) in 16-lane
    tiles: ``b``'s and ``start``'s columns copied into the first lanes of zero-padded copies, a block
    of :data:`NARROW_ROWS` rows of ``c`` computed into a padded buffer (its sums continued from
    ``c``'s values for :data:`MORE`) and its first lanes copied back. Each lane is one output, its
    products added in ``t`` order as everywhere in :func:`gemm`; the padding's lanes are discarded."""
    m, n = c.shape
    w = n - j0
    bp = np.zeros((_products(idx, b), _LANES), np.float32)
    for t in range(_products(idx, b)):
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
        for i in range(0, r, tile_rows):
            _rows(block, idx, bp, sp, cp, mode, i, min(tile_rows, r - i), 0, _LANES)
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
def chunk_examples(p_out, width, bmax):
    """Examples per chunk of a layer's batch (``p_out`` patch rows of ``width`` floats each): about
    :data:`CHUNK_FLOATS` floats of patches, so that a chunk's patches and their gradients stay in
    the second-level cache between the kernels that write and read them."""
    return max(1, min(bmax, CHUNK_FLOATS // max(1, p_out * width)))


__all__ = [
    "BIAS",
    "CHUNK_FLOATS",
    "MORE",
    "ZERO",
    "chunk_examples",
    "column_order",
    "conv_forward",
    "conv_forward_chunks",
    "gemm",
    "im2col_offsets",
]
