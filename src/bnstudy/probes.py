"""The companion probes' compiled loop nest: many training-mode batches, row 0's label each.

A probe batch is ``b`` test rows whose row 0 is the probed example; its result is
the label training mode gives row 0 in that batch (see :mod:`bnstudy.companions`).
One call of :func:`probe_design` takes every batch of one example's design (``K``
batches of ``b`` rows, as test-row indices) through every model of a stack:

1. the first layer depends on the row alone, so it is computed once per test row
   and model before any probe (:func:`first_layer_into`, with
   :func:`bnstudy.kernels.linear_t`) and gathered into each batch; so is the first
   normaliser when it normalises each row by itself (layer and group norm, and the
   ReLU of ``none``: ``kernels.norm_train`` of every test row);
2. batch norm and renorm: the first normaliser in training mode over each batch,
   with the statistics of its ``b`` rows; ReLU;
3. the second Linear for every row of every batch (with layer or group norm, or
   none, only row 0's: each row is normalised by itself, so no companion can change
   row 0's label, and the other rows are not computed);
4. the second normaliser: batch statistics from all ``b`` rows, but only row 0 is
   normalised (no other row's value is needed); ReLU;
5. the output layer for row 0, and its label: the index of the first largest logit.

Every step is one of :mod:`bnstudy.kernels`' building blocks (``batch_moments``,
``renorm_rd``, ``batch_norm_rows``, ``row_norm``, ``linear_t``, ``argmax_rows``),
called on the same values in the same order as :func:`bnstudy.kernels.logits`
with ``train=True, batch=b`` calls them on that batch; ``invstd = 1 / sqrt(var +
eps)`` is written as in ``kernels.norm_train``. So a probe's label is, bit for bit,
the label ``kernels.logits`` gives row 0 of that batch (``tests/test_probes.py``).
The rows of about ``PROBE_ROWS`` rows' worth of whole batches go through the second
Linear together (:func:`linear_t_tiled`: tiles of four rows, across batch
boundaries; every output is still its bias plus its products in ``k`` order).
Running statistics are read (batch renorm), never written.

Models are the outer loop, so each model's weights stay in cache while all its
batches pass; scratch rows are reused from chunk to chunk.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

from .fixedmath import JIT
from .kernels import (
    BATCH,
    GROUP,
    KIND,
    LAYER,
    RENORM,
    argmax_rows,
    batch_moments,
    batch_norm_rows,
    linear_t,
    norm_train,
    renorm_rd,
    row_norm,
    stack_arrays,
)

PROBE_ROWS = 256  # rows per model that go through the second Linear together (whole batches)


# ---- the second Linear in register tiles ---------------------------------------------
#
# kernels.linear_t keeps its outputs in memory: every product added is a load and a
# store of the output, and the stores bound its speed at about half of what the
# core's multipliers and adders can do. linear_t_tiled keeps a tile of 4 rows x 16
# outputs in eight 8-lane registers while k runs from 0 to the end, and stores each
# output once. The lanes are independent outputs; each lane does exactly what
# linear_t does for its output (start from the bias, then for k = 0, 1, ...: round
# the product, round the sum), so the results are the same bits. The vectors are
# LLVM's <8 x float>: a CPU with narrower registers (SSE, NEON) computes each as two
# halves, a wider one as one; plain fmul and fadd carry no fast-math flags, so they
# are never fused into a multiply-add.

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
    """:func:`bnstudy.kernels.linear_t`, bit for bit, with the outputs in registers.

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


# ---- the probes ----------------------------------------------------------------------


@numba.njit(**JIT)
def first_layer_into(x, w1t, b1, pre):
    """``pre[m] = x @ W1^T + b1`` for every model ``m`` (``pre`` is ``(M, N, F)``)."""
    for m in range(w1t.shape[0]):
        linear_t(x, w1t[m], b1[m], pre[m])


@numba.njit(**JIT)
def _relu_rows(h, start, n, out, out_start):
    """ReLU of rows ``start ..`` of ``h`` into ``out`` from ``out_start`` (kind ``none``)."""
    for j in range(n):
        for f in range(h.shape[1]):
            y = h[start + j, f]
            out[out_start + j, f] = y if y > 0 else np.float32(0)


@numba.njit(**JIT)
def _batch_stats(kind, h, start, b, running_mean, running_var, eps, rmax, dmax, mean, var, invstd, r, d):
    """``mean``, ``invstd`` (and renorm's ``r``, ``d``) of rows ``start .. start + b - 1``
    of ``h``, as ``kernels.norm_train`` computes them."""
    batch_moments(h, start, b, mean, var)
    for f in range(h.shape[1]):
        invstd[f] = np.float32(1) / np.sqrt(var[f] + eps)
    if kind == RENORM:
        renorm_rd(mean, var, running_mean, running_var, eps, rmax, dmax, r, d)


@numba.njit(**JIT)
def probe_design(
    kind,
    first,
    batches,
    g1,
    be1,
    rm1,
    rv1,
    w2t,
    b2,
    g2,
    be2,
    rm2,
    rv2,
    w3t,
    b3,
    eps,
    groups,
    rmax,
    dmax,
    chunk,
    labels,
    row_logits,
):
    """Training-mode labels of row 0 of every batch, for every model, into ``labels`` ``(M, K)``.

    ``first`` ``(M, N, H1)`` is the first hidden layer of every test row: its
    pre-normalisation value for batch norm and renorm, whose statistics come from the
    batch; its output (normaliser and ReLU) for the others, which normalise each row
    by itself. ``batches`` ``(K, b)`` are row indices into it; the parameters are a
    stack's (``(M, ...)``, weights as ``W^T``). ``row_logits`` ``(M, K, C)`` receives
    row 0's logits too, unless it has no rows. ``chunk`` batches go through together.
    """
    n_models = first.shape[0]
    h1, h2 = first.shape[2], w2t.shape[2]
    k_all, b = batches.shape
    rows = chunk * b
    batch_kind = kind == BATCH or kind == RENORM
    renorm = kind == RENORM
    gathered = np.empty((rows if batch_kind else 0, h1), np.float32)
    act1 = np.empty((rows, h1), np.float32)
    hid2 = np.empty((rows, h2), np.float32)
    act2 = np.empty((chunk, h2), np.float32)
    logits = np.empty((chunk, w3t.shape[2]), np.float32)
    top = np.empty(chunk, np.int64)
    f_ = max(h1, h2)
    mean, var, invstd = np.empty(f_, np.float32), np.empty(f_, np.float32), np.empty(f_, np.float32)
    r, d = np.empty(f_, np.float32), np.empty(f_, np.float32)
    none1, none2 = np.empty((0, h1), np.float32), np.empty((0, h2), np.float32)
    keep = row_logits.shape[0] > 0
    for m in range(n_models):
        src = first[m]
        for k0 in range(0, k_all, chunk):
            kn = min(chunk, k_all - k0)
            n = kn * b
            if batch_kind:
                # the batches' rows, batch after batch, then the first normaliser in training
                # mode (statistics of each batch) and ReLU
                for j in range(kn):
                    for i in range(b):
                        row = src[batches[k0 + j, i]]
                        for f in range(h1):
                            gathered[j * b + i, f] = row[f]
                for j in range(kn):
                    _batch_stats(kind, gathered, j * b, b, rm1[m], rv1[m], eps, rmax, dmax, mean, var, invstd, r, d)
                    batch_norm_rows(
                        gathered, j * b, b, mean, invstd, g1[m], be1[m], r, d, renorm, True, act1, j * b, none1
                    )
            else:
                # normalised per row already, so no companion can reach row 0: row 0 of each
                # batch alone goes on, as row j (the rows are independent up to the output)
                n = kn
                for j in range(kn):
                    row = src[batches[k0 + j, 0]]
                    for f in range(h1):
                        act1[j, f] = row[f]
            # second Linear, every row that matters
            linear_t_tiled(act1[:n], w2t[m], b2[m], hid2[:n])
            # second normaliser: statistics from all b rows, row 0 normalised
            if batch_kind:
                for j in range(kn):
                    _batch_stats(kind, hid2, j * b, b, rm2[m], rv2[m], eps, rmax, dmax, mean, var, invstd, r, d)
                    batch_norm_rows(hid2, j * b, 1, mean, invstd, g2[m], be2[m], r, d, renorm, True, act2, j, none2)
            elif kind == LAYER or kind == GROUP:
                for j in range(kn):  # row_norm writes row j of its output: a scratch, then act2
                    row_norm(hid2, j, groups, eps, g2[m], be2[m], True, act1, none2, none2)
                    for f in range(h2):
                        act2[j, f] = act1[j, f]
            else:
                for j in range(kn):
                    _relu_rows(hid2, j, 1, act2, j)
            # output layer and label, row 0 of each batch
            linear_t(act2[:kn], w3t[m], b3[m], logits[:kn])
            argmax_rows(logits[:kn], top[:kn])
            for j in range(kn):
                labels[m, k0 + j] = top[j]
            if keep:
                for j in range(kn):
                    for c in range(logits.shape[1]):
                        row_logits[m, k0 + j, c] = logits[j, c]


def aligned_copy(a: np.ndarray, align: int = 64) -> np.ndarray:
    """A C-contiguous float32 copy of ``a`` whose data start on an ``align``-byte boundary
    (a cache line: the tiled product then loads each 16-output row of ``W^T`` from one line)."""
    a = np.asarray(a, dtype=np.float32)
    buf = np.empty(a.size + align // 4, np.float32)
    start = (-buf.ctypes.data % align) // 4
    out = buf[start : start + a.size].reshape(a.shape)
    out[...] = a
    return out


class Prober:
    """A stack of models ready for probing: the kernel's arrays and the first layer of
    every test row, computed once; :meth:`labels` then probes any batches of rows of ``x``."""

    def __init__(self, stacked: dict, spec, x: np.ndarray, limits=(1.0, 0.0), rows: int = PROBE_ROWS):
        arrays = stack_arrays(stacked)
        (w1t, b1, *self._norm1, self._w2t, self._b2), rest = arrays[:8], arrays[8:]
        self._norm2, (self._w3t, self._b3) = rest[:4], rest[4:]
        self._w2t = aligned_copy(self._w2t)
        self.models = w1t.shape[0]
        self.rows = len(x)
        self.kind = KIND[spec.normaliser]
        self.groups = spec.groups if self.kind == GROUP else 1
        self.eps = np.float32(spec.eps)
        self.rmax, self.dmax = np.float32(limits[0]), np.float32(limits[1])
        self.rows_per_chunk = int(rows)
        self.first = np.empty((self.models, self.rows, w1t.shape[2]), np.float32)
        first_layer_into(np.ascontiguousarray(x, dtype=np.float32), w1t, b1, self.first)
        if self.kind not in (BATCH, RENORM):  # normalised row by row: once per test row, not per batch
            pre, (g1, be1, rm1, rv1) = self.first.copy(), self._norm1
            for m in range(self.models):
                norm_train(
                    self.kind,
                    pre[m],
                    1,
                    g1[m],
                    be1[m],
                    rm1[m],
                    rv1[m],
                    self.eps,
                    self.groups,
                    self.rmax,
                    self.dmax,
                    True,
                    self.first[m],
                )

    def labels(self, batches: np.ndarray, logits: bool = False):
        """Training-mode labels ``(M, K)`` of row 0 of each of the ``(K, b)`` batches;
        with ``logits``, also row 0's logits ``(M, K, C)``: ``(labels, logits)``."""
        batches = np.ascontiguousarray(batches, dtype=np.int64)
        if batches.ndim != 2 or (batches.shape[1] < 2 and self.kind in (BATCH, RENORM)):
            raise ValueError(f"batches must be (K, b) with b >= 2 for batch statistics, got {batches.shape}")
        if batches.size and (batches.min() < 0 or batches.max() >= self.rows):
            raise ValueError(f"row indices must lie in [0, {self.rows})")
        out = np.empty((self.models, len(batches)), np.int64)
        classes = self._w3t.shape[2]
        z = np.empty((self.models, len(batches), classes) if logits else (0, 0, classes), np.float32)
        if len(batches):
            probe_design(
                self.kind,
                self.first,
                batches,
                *self._norm1,
                self._w2t,
                self._b2,
                *self._norm2,
                self._w3t,
                self._b3,
                self.eps,
                self.groups,
                self.rmax,
                self.dmax,
                max(1, min(len(batches), self.rows_per_chunk // batches.shape[1])),
                out,
                z,
            )
        return (out, z) if logits else out


__all__ = ["PROBE_ROWS", "Prober", "first_layer_into", "linear_t_tiled", "probe_design"]
