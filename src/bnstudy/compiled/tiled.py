"""The Linear layer with its outputs in registers, for a target without AVX-512: ``blocks.linear_t``, bit for bit.

The companion probes (:mod:`bnstudy.compiled.probes`) push many rows through the second
Linear. Where Numba compiles for a CPU with AVX-512 they use :func:`bnstudy.compiled.convgemm.gemm`
(8 rows x 32 outputs in 16 of its 32 vector registers); elsewhere :func:`linear_t_tiled`: tiles of
4 rows x 16 outputs held in :mod:`bnstudy.compiled.lanes`' 16-lane registers while k runs from 0
to the end, each output stored once, the inputs read in place (gemm reads them through an index
array, which the convolutions need and a Linear does not). As the simulated AVX2 machine one
example's companion design took 6% less CPU with it than with gemm's 4-row tiles; natively on
AVX-512, gemm's 8-row tiles are the faster (docs/speed.md, 2026-12-07): so the kernel is chosen
by target.

Each lane is one output and does exactly what ``linear_t`` does for it (start from the bias,
then for k = 0, 1, ...: round the product, round the sum), so the results are the same bits as
gemm's and ``linear_t``'s; plain fmul and fadd carry no fast-math flags, so they are never
fused into a multiply-add. Written by hand for speed, with the order of every sum fixed;
compiled code only.
"""

from __future__ import annotations

import numba

from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.blocks import linear_t
from bnstudy.compiled.lanes import _add_product, _load, _load1, _splat, _store


@numba.njit(**JIT)
def linear_t_tiled(a, wt, bias, out):
    """:func:`bnstudy.compiled.blocks.linear_t`, bit for bit, with the outputs in registers.

    Tiles of 4 rows x 16 outputs (row groups in order, all outputs of a group before
    the next); outputs past the last multiple of 16 one at a time, rows past the last
    multiple of 4 by ``linear_t`` itself. Every output is ``bias[o] + a[i, 0] *
    wt[0, o] + a[i, 1] * wt[1, o] + ...``, added in ``k`` order from the bias.
    """
    n, kk = a.shape
    oo = wt.shape[1]
    if n == 0 or oo == 0:
        return
    if (kk > 0 and wt.strides[1] != 4) or out.strides[1] != 4 or bias.strides[0] != 4:
        raise ValueError("linear_t_tiled needs W^T, bias and out with consecutive float32 outputs")
    full_rows = n - n % 4
    full_outputs = oo - oo % 16
    for i in range(0, full_rows, 4):
        for o0 in range(0, full_outputs, 16):
            c0 = _load1(bias, o0)
            c1, c2, c3 = c0, c0, c0
            for k in range(kk):
                w = _load(wt, k, o0)
                c0 = _add_product(c0, _splat(a[i, k]), w)
                c1 = _add_product(c1, _splat(a[i + 1, k]), w)
                c2 = _add_product(c2, _splat(a[i + 2, k]), w)
                c3 = _add_product(c3, _splat(a[i + 3, k]), w)
            _store(out, i, o0, c0)
            _store(out, i + 1, o0, c1)
            _store(out, i + 2, o0, c2)
            _store(out, i + 3, o0, c3)
        for r in range(i, i + 4):
            for o in range(full_outputs, oo):
                acc = bias[o]
                for k in range(kk):
                    acc += a[r, k] * wt[k, o]
                out[r, o] = acc
    if full_rows < n:
        linear_t(a[full_rows:], wt, bias, out[full_rows:])


__all__ = ["linear_t_tiled"]
