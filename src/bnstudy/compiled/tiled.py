"""The Linear layer with its outputs in registers, for a target without AVX-512: ``blocks.linear_t``, bit for bit.

The companion probes (:mod:`bnstudy.compiled.probes`) push many rows through the second
Linear. Where Numba compiles for a CPU with AVX-512 they use :func:`bnstudy.compiled.convgemm.gemm`
(8 rows x 32 outputs in 16 of its 32 vector registers); elsewhere :func:`linear_t_tiled`, which
keeps a tile of 4 rows x 16 outputs in eight 8-lane registers while k runs from 0 to the end and
stores each output once. One example's companion design took 0.0995 s with it against 0.1162 s
with gemm's 4-row tiles as the simulated AVX2 machine, but 0.0987 s against 0.0803 natively on
AVX-512 (docs/speed.md, 2026-12-07): so the kernel is chosen by target.

``blocks.linear_t`` keeps its outputs in memory: every product added is a load and a
store of the output. The lanes here are independent outputs; each lane does exactly what
``linear_t`` does for its output (start from the bias, then for k = 0, 1, ...: round
the product, round the sum), so the results are the same bits as gemm's and ``linear_t``'s.
The vectors are LLVM's <8 x float>: a CPU with narrower registers (SSE, NEON) computes each
as two halves; plain fmul and fadd carry no fast-math flags, so they are never fused into a
multiply-add. Written by hand for speed, with the order of every sum fixed; compiled code only.
"""

from __future__ import annotations

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

from bnstudy.base.fixedmath import JIT
from bnstudy.compiled.blocks import linear_t

_LANES = 8
_VEC = ir.VectorType(ir.FloatType(), _LANES)


class _F32x8(types.Type):
    """Eight float32 lanes held in a register (only inside compiled code)."""

    def __init__(self):
        super().__init__(name="f32x8")


f32x8 = _F32x8()


@register_model(_F32x8)
class _F32x8Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _VEC)


def _element_pointer(context, builder, aty, arr, indices):
    ary = context.make_array(aty)(context, builder, arr)
    return cgutils.get_item_pointer(context, builder, aty, ary, indices, wraparound=False)


@intrinsic
def _load2(typingctx, arr, i, j):
    """``arr[i, j : j + 8]`` of a C-contiguous float32 array (no bounds check)."""

    def codegen(context, builder, sig, args):
        ptr = _element_pointer(context, builder, sig.args[0], args[0], [args[1], args[2]])
        return builder.load(builder.bitcast(ptr, _VEC.as_pointer()), align=4, typ=_VEC)

    return f32x8(arr, i, j), codegen


@intrinsic
def _load1(typingctx, arr, j):
    """``arr[j : j + 8]`` of a contiguous float32 vector (no bounds check)."""

    def codegen(context, builder, sig, args):
        ptr = _element_pointer(context, builder, sig.args[0], args[0], [args[1]])
        return builder.load(builder.bitcast(ptr, _VEC.as_pointer()), align=4, typ=_VEC)

    return f32x8(arr, j), codegen


@intrinsic
def _store2(typingctx, arr, i, j, v):
    """``arr[i, j : j + 8] = v`` (no bounds check)."""

    def codegen(context, builder, sig, args):
        ptr = _element_pointer(context, builder, sig.args[0], args[0], [args[1], args[2]])
        builder.store(args[3], builder.bitcast(ptr, _VEC.as_pointer()), align=4)
        return context.get_dummy_value()

    return types.none(arr, i, j, v), codegen


@intrinsic
def _splat(typingctx, x):
    """A float32 in every lane."""

    def codegen(context, builder, sig, args):
        first = builder.insert_element(ir.Constant(_VEC, ir.Undefined), args[0], ir.Constant(ir.IntType(32), 0))
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), _LANES), [0] * _LANES)
        return builder.shuffle_vector(first, ir.Constant(_VEC, ir.Undefined), zeros)

    return f32x8(types.float32), codegen


@intrinsic
def _add_product(typingctx, c, x, w):
    """``c + x * w`` in every lane: the product rounded to float32, then the sum."""

    def codegen(context, builder, sig, args):
        return builder.fadd(args[0], builder.fmul(args[1], args[2]))

    return f32x8(f32x8, f32x8, f32x8), codegen


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
            o1 = o0 + 8
            b0 = _load1(bias, o0)
            b1 = _load1(bias, o1)
            c00, c01, c10, c11, c20, c21, c30, c31 = b0, b1, b0, b1, b0, b1, b0, b1
            for k in range(kk):
                w0 = _load2(wt, k, o0)
                w1 = _load2(wt, k, o1)
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
            _store2(out, i, o0, c00)
            _store2(out, i, o1, c01)
            _store2(out, i + 1, o0, c10)
            _store2(out, i + 1, o1, c11)
            _store2(out, i + 2, o0, c20)
            _store2(out, i + 2, o1, c21)
            _store2(out, i + 3, o0, c30)
            _store2(out, i + 3, o1, c31)
        for r in range(i, i + 4):
            for o in range(full_outputs, oo):
                acc = bias[o]
                for k in range(kk):
                    acc += a[r, k] * wt[k, o]
                out[r, o] = acc
    if full_rows < n:
        linear_t(a[full_rows:], wt, bias, out[full_rows:])


__all__ = ["linear_t_tiled"]
