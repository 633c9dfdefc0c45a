"""The convolutions' register-tiled kernels (bnstudy.compiled.convgemm, convgrads) are the old path, bit for bit.

Each kernel against the one it replaces (``conv.im2col`` + ``blocks.linear_t``,
``gradients.linear_backward`` on the patches, ``conv.col2im``), compared with ``array_equal`` on
the bytes, on random shapes whose rows, columns and channel counts leave remainders of every tile
(8 rows, 32 and 16 columns, :data:`convgrads.ROW_BLOCK` rows of the weight gradients), with values
that make signed zeros, exact zeros and padding;. (Whole runs: the test and fashion-tiny configs'
manifests, and the deep network's tests against PyTorch.) The machine code of the new kernels has no fused multiply-add.
"""

import os
import re
from pathlib import Path

import numpy as np
import pytest

from bnstudy.compiled import blocks, conv, convgemm, convgrads, gradients

F32 = np.float32


def values(rng, shape, zero_below=0.05, negative_zero_below=0.08):
    """Standard normal float32 with exact zeros (a share ``zero_below``) and negative zeros (the next
    share, up to ``negative_zero_below``), as a ReLU's output has both (the MLP's tests import it)."""
    x = rng.standard_normal(shape).astype(F32)
    flat = x.reshape(-1)
    pick = rng.random(flat.shape[0])
    flat[pick < zero_below] = 0.0
    flat[(pick >= zero_below) & (pick < negative_zero_below)] = -0.0
    return x


def _same(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes()


# (3, 11, 80) and (2, 5, 130): fewer than 8 rows, 64 columns in one tile then 16 (and a narrow rest)
GEMM_SHAPES = [
    (1, 1, 1),
    (7, 5, 16),
    (8, 9, 16),
    (9, 3, 17),
    (13, 20, 32),
    (17, 33, 48),
    (33, 64, 64),
    (24, 7, 100),
    (3, 11, 80),
    (2, 5, 130),
]


@pytest.mark.parametrize(("m", "t", "n"), GEMM_SHAPES)
@pytest.mark.parametrize("mode", [convgemm.BIAS, convgemm.ZERO, convgemm.MORE])
@pytest.mark.parametrize("columns_outer", [False, True])
@pytest.mark.parametrize("tile_rows", [8, 4])
@pytest.mark.parametrize("indexed", [True, False])
def test_gemm_adds_each_output_in_order_from_its_start(m, t, n, mode, columns_outer, tile_rows, indexed):
    """Every output is the start (bias, +0 or the output's value) then the products in t order,
    as a scalar float32 loop adds them, with the tiles of either height (an AVX-512 target's 8
    rows, another's 4: bnstudy.compiled.lanes.TILE_ROWS), through an index array or (``idx`` None, a
    Linear layer's) reading ``a``'s first columns in place."""
    rng = np.random.default_rng(m * 1000 + t * 10 + n)
    a = values(rng, (m, t + 3))
    idx = rng.permutation(t + 3)[:t].astype(np.int64) if indexed else np.arange(t)
    b = values(rng, (t, n))
    start = values(rng, n)
    c0 = values(rng, (m, n))
    want = np.empty_like(c0)
    for i in range(m):
        for j in range(n):
            acc = start[j] if mode == convgemm.BIAS else (F32(0) if mode == convgemm.ZERO else c0[i, j])
            for k in range(t):
                acc = F32(acc + F32(a[i, idx[k]] * b[k, j]))
            want[i, j] = acc
    got = c0.copy()
    convgemm.gemm(a, idx if indexed else None, b, start, got, mode, columns_outer, tile_rows)
    _same(got, want)


def _layer(rng, n_ex, side, stride, c_in, c_out):
    table = conv.source_table(side, stride)
    a = np.maximum(values(rng, (n_ex * side * side, c_in)), F32(0))  # a ReLU's output: many zeros
    a[rng.random(a.shape) < 0.02] = -0.0
    w = values(rng, (c_out, 9 * c_in))
    bias = values(rng, c_out)
    return table, a, w, bias


LAYERS = [
    (2, 28, 1, 1, 16),
    (3, 28, 2, 16, 32),
    (5, 7, 1, 64, 64),
    (4, 14, 2, 32, 64),
    (1, 5, 2, 3, 5),
    (3, 9, 1, 17, 24),
    (2, 6, 2, 8, 40),
    (60, 7, 1, 16, 16),
]


@pytest.mark.parametrize(("n_ex", "side", "stride", "c_in", "c_out"), LAYERS)
def test_forward_is_im2col_then_linear_t(n_ex, side, stride, c_in, c_out):
    rng = np.random.default_rng(side * c_in + c_out)
    table, a, w, bias = _layer(rng, n_ex, side, stride, c_in, c_out)
    rows = n_ex * table.shape[0]
    patches = np.empty((rows, 9 * c_in), F32)
    conv.im2col(a, n_ex, side * side, table, patches)
    want = np.empty((rows, c_out), F32)
    blocks.linear_t(patches, np.ascontiguousarray(w.T), bias, want)
    offsets = np.empty_like(patches)
    convgemm.im2col_offsets(a, n_ex, side * side, table, offsets)
    got = np.empty_like(want)
    convgemm.conv_forward(offsets, convgemm.column_order(c_in), np.ascontiguousarray(w.T), bias, got)
    _same(got, want)


@pytest.mark.parametrize(("n_ex", "side", "stride", "c_in", "c_out"), LAYERS)
def test_backward_is_linear_backward_on_the_patches_then_col2im(n_ex, side, stride, c_in, c_out):
    rng = np.random.default_rng(7 * side + c_in + c_out)
    table, a, w, _ = _layer(rng, n_ex, side, stride, c_in, c_out)
    rows = n_ex * table.shape[0]
    spare = 5  # scratch rows past the batch's, as a run's scratch for its largest batch has
    patches = np.zeros((rows + spare, 9 * c_in), F32)
    conv.im2col(a, n_ex, side * side, table, patches)
    dh = values(rng, (rows + spare, c_out))
    dw, db = np.empty_like(w), np.empty(c_out, F32)
    dpatches = np.empty_like(patches)
    gradients.linear_backward(dh, patches, rows, w, dw, db, dpatches, patches)
    want_da = values(rng, (n_ex * side * side, c_in))
    conv.col2im(dpatches, n_ex, side * side, table, want_da)

    offsets = np.zeros_like(patches)
    convgemm.im2col_offsets(a, n_ex, side * side, table, offsets)
    ident = np.arange(max(convgrads.ROW_BLOCK, c_out))
    got_dw, got_db = values(rng, w.shape), values(rng, c_out)
    convgrads.conv_weight_grads(dh, offsets, rows, c_in, got_dw, got_db, ident, np.empty(w.size + 3, F32))
    _same(got_dw, dw)
    _same(got_db, db)
    w_offsets = np.empty_like(w)
    convgrads.offsets_major(w, c_in, w_offsets)
    d_offsets = np.empty_like(offsets)
    convgrads.conv_input_grad(dh, rows, w_offsets, ident, d_offsets)
    got_da = values(rng, want_da.shape)
    convgrads.col2im_offsets(d_offsets, n_ex, side * side, table, a, got_da)
    _same(got_da, want_da)


def test_weight_gradients_span_several_row_blocks():
    """More rows than a block: the sums carried from block to block are the rows' order."""
    rng = np.random.default_rng(3)
    for c_in, c_out in ((1, 16), (16, 32), (3, 8)):
        rows = 2 * convgrads.ROW_BLOCK + 37
        patches = np.maximum(values(rng, (rows, 9 * c_in)), 0)
        dh = values(rng, (rows, c_out))
        w = values(rng, (c_out, 9 * c_in))
        dw, db = np.empty_like(w), np.empty(c_out, F32)
        gradients.linear_backward(dh, patches, rows, w, dw, db, np.empty((rows, 0), F32), patches)
        offsets = patches.reshape(rows, c_in, 9).transpose(0, 2, 1).reshape(rows, 9 * c_in).copy()
        got_dw, got_db = np.empty_like(w), np.empty_like(db)
        ident = np.arange(convgrads.ROW_BLOCK)
        convgrads.conv_weight_grads(dh, offsets, rows, c_in, got_dw, got_db, ident, np.empty(w.size, F32))
        _same(got_dw, dw)
        _same(got_db, db)


def test_a_reordered_sum_would_show():
    """The comparison can fail: the same products added in another order differ in some output."""
    rng = np.random.default_rng(11)
    a, b = values(rng, (16, 300)), values(rng, (300, 32))
    got = np.empty((16, 32), F32)
    convgemm.gemm(a, np.arange(300), b, b[0], got, convgemm.ZERO)
    reordered = np.empty_like(got)
    convgemm.gemm(a, np.arange(300)[::-1].copy(), b[::-1].copy(), b[0], reordered, convgemm.ZERO)
    assert got.tobytes() != reordered.tobytes()


@pytest.mark.slow
def test_no_fused_multiply_add_and_the_products_use_16_lane_registers():
    """The kernel cache's machine code of the register-tiled kernels (what every job loads; see
    tests/machinecode.py): no fused multiply-add anywhere, and the products' multiplies and adds
    are 16-lane (zmm) instructions where the host has AVX-512. tests/compiled/test_kernels.py checks the
    detector on a control function and every other kernel."""
    import llvmlite.binding as llvm

    import machinecode
    from conftest import _warm_up_kernels

    _warm_up_kernels(("native",))
    code = machinecode.disassemble(machinecode.target_directory("native"))
    modules = ("bnstudy.compiled.convgemm.", "bnstudy.compiled.convgrads.")
    report = {k: machinecode.summary(a) for k, a in code.items() if k.startswith(modules)}
    names = {k.rsplit(".", 1)[1] for k in report}
    assert {"gemm", "_narrow", "_rows8_into", "col2im_add", "relu_mask", "weight_grad_rows"} <= names, names
    assert all(r["lines"] > 10 for r in report.values())
    fused = {k: r["fma"] for k, r in report.items() if r["fma"]}
    assert not fused, fused
    if re.search(r"\+avx512f\b", llvm.get_host_cpu_features().flatten()):
        for name in ("convgemm.gemm", "convgemm._narrow", "convgrads._rows8_into", "convgrads.weight_grad_rows"):
            r = report[f"bnstudy.compiled.{name}"]
            assert r["zmm_mul"] and r["zmm_add"], name


@pytest.mark.slow
def test_the_tile_height_follows_the_target_numba_compiles_for():
    """gemm's tiles are 8 rows high where Numba compiles for AVX-512 (32 vector registers) and 4 where
    it compiles for a CPU with 16 (bnstudy.compiled.lanes.TILE_ROWS): as this machine, as the simulated
    AVX2 machine and as the generic x86-64 CPU of the determinism runs."""
    import subprocess
    import sys

    import llvmlite.binding as llvm

    from bnstudy.pipeline.machines import environments

    code = "from bnstudy.compiled import lanes; print(lanes.TILE_ROWS)"
    src = str(Path(__file__).resolve().parents[2] / "src")
    host = 8 if re.search(r"\+avx512f\b", llvm.get_host_cpu_features().flatten()) else 4
    for machine, want in (("native", host), ("avx2", 4), ("generic", 4)):
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CPU")}
        env.update(environments()[machine], PYTHONPATH=src)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert int(out.stdout) == want, (machine, out.stdout, out.stderr)
