"""Sixteen float32 lanes held in a register: the type and the intrinsics the register-tiled kernels compose.

:mod:`bnstudy.compiled.convgemm` (the product and the convolution's forward) and
:mod:`bnstudy.compiled.convgrads` (its gradients) keep a tile of outputs in 16-lane vector
registers for a whole sum. Each intrinsic here is one LLVM operation on such a register (a load,
a store, a float32 in every lane, ``fadd``, ``fmul`` then ``fadd``, a select): plain instructions
with no fast-math flags, so a product is rounded to float32 before it is added and never fused
into a multiply-add. Written by hand for speed (the sums stay in registers, not loaded and stored
per product), with the arithmetic's order fixed by the kernels that call them; compiled code only.
"""

from __future__ import annotations

# a kernel module: its intrinsics are compiled into the kernels that call them, so the kernel
# cache's digest (bnstudy/__init__.py, which reads the modules that ``import numba``) includes it
import numba  # noqa: F401
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

_LANES = 16
_VEC = ir.VectorType(ir.FloatType(), _LANES)


def _target_has_avx512() -> bool:
    """Whether Numba compiles for a CPU with AVX-512F: the features it passes to LLVM
    (``NUMBA_CPU_FEATURES``, empty for ``NUMBA_CPU_NAME=generic``, else the host's)."""
    from numba.core import codegen, config

    features = config.CPU_FEATURES if config.CPU_FEATURES is not None else codegen.get_host_cpu_features()
    return "+avx512f" in features.split(",")


# Rows of a gemm tile (bnstudy.compiled.convgemm). A 16-lane register is one zmm register with AVX-512,
# which has 32 of them: 8 rows x 32 columns of sums are 16 registers, with room for the operands. With
# AVX2 (or SSE) the same 16 lanes take two ymm (four xmm) registers of 16: an 8-row tile spills its sums
# to memory at every product (one example's companion design 1.53x slower than 4-row tiles, batch-64
# training 1.32x, measured as the AVX2 machine on an AVX-512 Xeon), so there the tiles are 4 rows high.
# Only which outputs share a tile changes, never a sum's order: the same bits on every target. The
# kernel cache files code by the CPU it was compiled for, so each target's choice is its own.
TILE_ROWS = 8 if _target_has_avx512() else 4


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
