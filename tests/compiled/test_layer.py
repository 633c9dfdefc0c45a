"""The package's fixed-order batch-norm layer and float64 reductions: bit for bit against
the documented steps in NumPy, within rounding against PyTorch and NumPy's own reductions,
and the same bytes on every call."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import torch

from bnstudy.base.fixedmath import JIT
from bnstudy.compiled import reductions
from bnstudy.compiled.batchstats import running_update
from bnstudy.compiled.layer import BatchNorm1d, _inference, _train_batch, _train_pass, _update

EPS = 1e-5


def _case(seed=0, n=60, features=7, sizes=(8, 2, 13, 5, 20)):
    rng = np.random.default_rng(seed)
    x = 2.0 + 3.0 * rng.random((n, features)) ** 2 * rng.choice([-1.0, 1.0], (n, features))
    perm = rng.permutation(n)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    batches = [perm[a:b] for a, b in zip(starts[:-1], starts[1:])]
    weight, bias = 0.5 + rng.random(features), rng.random(features) - 0.5
    return x, batches, weight, bias


def _sequential(x, batches, weight, bias, momentum, dtype):
    """The documented arithmetic in NumPy, one elementwise operation at a time in ``dtype``:
    sums over the batch's rows in its order, two passes, then PyTorch's update rule."""
    c = np.dtype(dtype).type
    x, w, b = x.astype(dtype), weight.astype(dtype), bias.astype(dtype)
    eps, one = c(EPS), c(1)
    f = x.shape[1]
    rm, rv = np.zeros(f, dtype), np.ones(f, dtype)
    out = np.zeros_like(x)
    for t, rows in enumerate(batches, start=1):
        count = c(len(rows))
        mean = np.zeros(f, dtype)
        for r in rows:
            mean = mean + x[r]
        mean = mean / count
        ssd = np.zeros(f, dtype)
        for r in rows:
            d = x[r] - mean
            ssd = ssd + d * d
        scale = w / np.sqrt(ssd / count + eps)
        out[rows] = (x[rows] - mean) * scale + b
        factor = one / c(t) if momentum is None else c(momentum)
        keep = one - factor
        rm = keep * rm + factor * mean
        rv = keep * rv + factor * (ssd / (count - one))
    scale = w / np.sqrt(rv + eps)
    inference = (x - rm) * scale + b
    return out, rm, rv, inference


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
@pytest.mark.parametrize("whole_pass", [True, False], ids=["train_pass", "per_batch"])
def test_layer_is_bit_identical_to_the_documented_steps(dtype, momentum, whole_pass):
    x, batches, weight, bias = _case()
    layer = BatchNorm1d(x.shape[1], eps=EPS, momentum=momentum, dtype=dtype, weight=weight, bias=bias)
    if whole_pass:
        out, _, _ = layer.train_pass(x, batches)
    else:
        out = np.zeros(x.shape, dtype)
        for rows in batches:
            out[rows] = layer(x[rows])
    expected, rm, rv, inference = _sequential(x, batches, weight, bias, momentum, dtype)
    assert out.dtype == dtype and layer.running_mean.dtype == dtype
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(layer.running_mean, rm)
    np.testing.assert_array_equal(layer.running_var, rv)
    np.testing.assert_array_equal(layer.eval()(x), inference)
    assert layer.num_batches_tracked == len(batches)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pass_returns_batch_means_and_biased_variances(dtype):
    x, batches, _, _ = _case()
    _, means, variances = BatchNorm1d(x.shape[1], dtype=dtype).train_pass(x, batches)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    for j, rows in enumerate(batches):
        np.testing.assert_allclose(means[j], x[rows].mean(0), rtol=tol, atol=tol)
        np.testing.assert_allclose(variances[j], x[rows].var(0), rtol=tol)


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
def test_float64_layer_agrees_with_torch_batchnorm1d_within_1e_12(momentum):
    x, batches, weight, bias = _case(1)
    layer = BatchNorm1d(x.shape[1], eps=EPS, momentum=momentum, weight=weight, bias=bias)
    ref = torch.nn.BatchNorm1d(x.shape[1], eps=EPS, momentum=momentum).double().train()
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(weight))
        ref.bias.copy_(torch.from_numpy(bias))
        for rows in batches:
            np.testing.assert_allclose(layer(x[rows]), ref(torch.from_numpy(x[rows])).numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(layer.running_mean, ref.running_mean.numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(layer.running_var, ref.running_var.numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(layer.eval()(x), ref.eval()(torch.from_numpy(x)).numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_call_gives_the_same_bytes(dtype):
    x, batches, weight, bias = _case(2)
    results = []
    for _ in range(2):
        layer = BatchNorm1d(x.shape[1], dtype=dtype, weight=weight, bias=bias)
        out, means, variances = layer.train_pass(x, batches)
        results.append(
            b"".join(
                a.tobytes() for a in (out, means, variances, layer.running_mean, layer.running_var, layer.eval()(x))
            )
        )
    assert results[0] == results[1]


def test_batch_of_one_is_refused():
    layer = BatchNorm1d(3)
    with pytest.raises(ValueError):
        layer(np.ones((1, 3)))
    with pytest.raises(ValueError):
        layer.train_pass(np.ones((5, 3)), [np.array([0, 1]), np.array([2])])
    assert layer.num_batches_tracked == 0
    np.testing.assert_array_equal(layer.running_var, 1.0)


def test_wrong_input_shape_and_dtype_are_refused():
    with pytest.raises(ValueError):
        BatchNorm1d(3)(np.ones((4, 2)))
    with pytest.raises(ValueError):
        BatchNorm1d(3, dtype=np.float16)


# ---- reductions ---------------------------------------------------------------------
def _rows(seed=3, n=301, f=9):
    rng = np.random.default_rng(seed)
    return rng.random((n, f)) * 10.0 ** rng.integers(-3, 4, f) + rng.integers(-50, 50, f)


def test_column_moments_are_row_order_sums_bit_for_bit_and_match_numpy():
    x = _rows()
    mean, var = reductions.column_moments(x)
    s = np.zeros(x.shape[1])
    for row in x:
        s = s + row
    m = s / len(x)
    q = np.zeros(x.shape[1])
    for row in x:
        q = q + (row - m) * (row - m)
    np.testing.assert_array_equal(mean, m)
    np.testing.assert_array_equal(var, q / len(x))
    np.testing.assert_allclose(mean, x.mean(0), rtol=1e-13)
    np.testing.assert_allclose(var, x.var(0), rtol=1e-12)


def test_column_moments_of_float32_widen_exactly():
    x = _rows().astype(np.float32)
    a, b = reductions.column_moments(x), reductions.column_moments(x.astype(np.float64))
    assert all(np.array_equal(p, q) for p, q in zip(a, b))


def test_weighted_column_sums_match_numpy_and_add_in_row_order():
    a = _rows(4, 40, 5)
    w = np.random.default_rng(5).random(40)
    out = reductions.weighted_column_sums(w, a)
    s = np.zeros(5)
    for wi, row in zip(w, a):
        s = s + wi * row
    np.testing.assert_array_equal(out, s)
    np.testing.assert_allclose(out, w @ a, rtol=1e-13)


def test_rms_matches_numpy_and_adds_in_c_order():
    a = _rows(6, 30, 4) - 20.0
    s = 0.0
    for v in a.ravel():
        s += float(v) * float(v)
    assert reductions.sum_of_squares(a) == s
    assert reductions.rms(a) == float(np.sqrt(s / a.size))
    assert reductions.rms(a) == pytest.approx(float(np.sqrt(np.mean(a**2))), rel=1e-14)
    with pytest.raises(ValueError):
        reductions.rms(np.zeros(0))


# ---- no fused multiply-add in the compiled loops -------------------------------------
def _uncached_asm(kernel, *args) -> str:
    fresh = numba.njit(**{**JIT, "cache": False})(kernel.py_func)
    fresh(*args)
    return "\n".join(fresh.inspect_asm().values()).lower()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_contain_no_fused_multiply_add(dtype):
    c = np.dtype(dtype).type
    x = np.ones((4, 3), dtype)
    v = [np.ones(3, dtype) for _ in range(7)]
    rows = np.arange(4)
    asm = [
        _uncached_asm(_train_batch, x, rows, c(4), v[0], v[1], c(EPS), np.empty_like(x), v[2], v[3], v[4]),
        _uncached_asm(_update, v[0], v[1], v[2], v[3], c(4), c(1), c(0.1), v[5]),
        _uncached_asm(running_update, v[0], v[1], v[2], v[3], c(0.1), c(1)),
        _uncached_asm(_inference, x, v[0], v[1], v[2], v[3], c(EPS), v[4], np.empty_like(x)),
        _uncached_asm(
            _train_pass,
            x,
            (rows, np.array([0, 4]), np.array([4], dtype)),
            (v[0], v[1], v[2], v[3]),
            (c(1), c(EPS), c(0.1), False),
            c(0),
            (np.empty_like(x), np.empty((1, 3), dtype), np.empty((1, 3), dtype)),
            (v[4], v[5], v[6]),
        ),
    ]
    if dtype == np.float64:
        asm.append(_uncached_asm(reductions._column_moments, x, v[0], v[1]))
        asm.append(_uncached_asm(reductions._weighted_column_sums, v[0], np.ones((3, 3)), v[1]))
        asm.append(_uncached_asm(reductions._sum_of_squares, v[0]))
    for code in asm:
        assert code.strip()
        assert "vfmadd" not in code and "vfmsub" not in code and "vfnmadd" not in code and "vfnmsub" not in code


LEVELS_CODE = """
import hashlib, os, numba, numpy as np
from bnstudy.compiled.layer import BatchNorm1d
rng = np.random.default_rng(0)
x = 2.0 + 3.0 * rng.random((60, 7)) ** 2 * rng.choice([-1.0, 1.0], (60, 7))
batches = np.array_split(rng.permutation(60), [8, 10, 23, 28])
h = hashlib.sha256()
for dtype in (np.float32, np.float64):
    for momentum in (0.1, None):
        layer = BatchNorm1d(7, momentum=momentum, dtype=dtype, weight=0.5 + rng.random(7), bias=rng.random(7) - 0.5)
        out, means, variances = layer.train_pass(x, batches)
        for a in (out, means, variances, layer.running_mean, layer.running_var, layer.eval()(x)):
            h.update(a.tobytes())
print(int(numba.config.OPT), os.environ["NUMBA_CACHE_DIR"], h.hexdigest())
"""


@pytest.mark.slow
def test_the_same_bytes_at_every_numba_optimisation_level():
    """The layer's training pass and inference (float32 and float64, a momentum and the cumulative
    average) compiled at the package's level (bnstudy.OPT_LEVEL, which importing bnstudy sets), at
    Numba's default 3 and at 0 (no optimisation): the same bytes, each level's code in a cache of its own.
    Numba is imported before the package, as a user's script may: the package's level still holds.
    Without fast-math no level may reorder or fuse floating-point arithmetic. (Numba's level is not the
    machine, so a kernel one level would change shows up here and not in the determinism runs.)"""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import bnstudy

    runs = []
    for level in (None, "3", "0"):
        env = os.environ | {"PYTHONPATH": str(Path(bnstudy.__file__).parents[1])}
        for name in ("NUMBA_OPT", "NUMBA_CACHE_DIR"):  # the package chooses both unless they are set
            env.pop(name, None)
        if level:
            env["NUMBA_OPT"] = level
        out = subprocess.run([sys.executable, "-c", LEVELS_CODE], env=env, check=True, capture_output=True, text=True)
        runs.append(out.stdout.split())
    levels, caches, digests = zip(*runs)
    assert levels == (bnstudy.OPT_LEVEL, "3", "0") and bnstudy.OPT_LEVEL == "2"
    assert len(set(caches)) == 3
    assert digests[0] == digests[1] == digests[2] and len(digests[0]) == 64
