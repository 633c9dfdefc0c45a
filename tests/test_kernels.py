"""The probes' compiled batch-norm kernel: its arithmetic, its output forms, its checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bnstudy.kernels import batch_norm
from bnstudy.norms import normalise

EPS = 1e-5


def _case(seed: int = 0, m: int = 3, n: int = 40, f: int = 24, k: int = 9, b: int = 5):
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(m, n, f, generator=g) * 2 + 0.5
    rows = torch.stack([torch.randperm(n, generator=g)[:b] for _ in range(k)])
    p = {"weight": torch.rand(m, f, generator=g) + 0.5, "bias": torch.randn(m, f, generator=g),
         "running_mean": torch.randn(m, f, generator=g) * 0.3, "running_var": torch.rand(m, f, generator=g) + 0.5}
    return src, rows, p


def _sequential_float32(src, rows, p, renorm, limits, relu):
    """The documented arithmetic, one float32 operation at a time in NumPy (no FMA, rows in order)."""
    x, idx = src.numpy(), rows.numpy()
    w, bias, rm, rv = (p[k].numpy() for k in ("weight", "bias", "running_mean", "running_var"))
    f32 = np.float32
    eps, rmax, dmax = f32(EPS), f32(limits[0]), f32(limits[1])
    m_, _, f_ = x.shape
    k_, b_ = idx.shape
    out = np.empty((m_, k_ * b_, f_), np.float32)
    for m in range(m_):
        for j in range(k_):
            batch = x[m, idx[j]]
            mean = np.zeros(f_, np.float32)
            for r in range(b_):
                mean = mean + batch[r]
            mean = mean / f32(b_)
            squares = np.zeros(f_, np.float32)
            for r in range(b_):
                dev = batch[r] - mean
                squares = squares + dev * dev
            sigma_batch = np.sqrt(squares / f32(b_) + eps)
            if renorm:
                sigma = np.sqrt(rv[m] + eps)
                r_ = np.minimum(np.maximum(sigma_batch / sigma, f32(1) / rmax), rmax)
                d_ = np.minimum(np.maximum((mean - rm[m]) / sigma, -dmax), dmax)
                scale, shift = r_ * w[m] / sigma_batch, d_ * w[m] + bias[m]
            else:
                scale, shift = w[m] / sigma_batch, bias[m]
            y = (batch - mean) * scale + shift
            out[m, j * b_:(j + 1) * b_] = np.where(y > 0, y, f32(0)) if relu else y
    return out


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


@pytest.mark.parametrize("renorm,limits", [(False, (1.0, 0.0)), (True, (2.0, 0.5)), (True, (3.0, 5.0))])
@pytest.mark.parametrize("relu", [True, False])
def test_kernel_is_the_documented_float32_arithmetic_bit_for_bit(renorm, limits, relu):
    """Sums in row order, no fused multiply-add, no reordering: equal to NumPy step by step."""
    src, rows, p = _case()
    out = torch.empty(src.shape[0], rows.numel(), src.shape[2])
    batch_norm(src, rows, p, out, eps=EPS, renorm=renorm, limits=limits, relu=relu)
    assert np.array_equal(_bits(out.numpy()), _bits(_sequential_float32(src, rows, p, renorm, limits, relu)))


@pytest.mark.parametrize("renorm", [False, True])
def test_kernel_is_training_mode_normalise_followed_by_relu(renorm):
    src, rows, p = _case(1)
    kind, limits = ("batchrenorm", (1.5, 0.3)) if renorm else ("batchnorm", (1.0, 0.0))
    before = {k: v.clone() for k, v in p.items()}
    out = torch.empty(src.shape[0], rows.numel(), src.shape[2])
    batch_norm(src, rows, p, out, eps=EPS, renorm=renorm, limits=limits)
    h = src[:, rows]  # (M, K, B, F)
    theirs = normalise(kind, h, p, train=True, update=False, eps=EPS, limits=limits).relu()
    torch.testing.assert_close(out.view_as(theirs), theirs, rtol=1e-5, atol=1e-5)
    assert all(torch.equal(v, before[k]) for k, v in p.items())  # running statistics only read


def test_first_rows_only_equal_row_zero_of_every_batch():
    src, rows, p = _case(2)
    m, k, b, f = src.shape[0], *rows.shape, src.shape[2]
    every, first = torch.empty(m, k * b, f), torch.empty(m, k, f)
    batch_norm(src, rows, p, every, eps=EPS, renorm=True, limits=(2.0, 1.0))
    batch_norm(src, rows, p, first, eps=EPS, renorm=True, limits=(2.0, 1.0))
    assert torch.equal(first, every.view(m, k, b, f)[:, :, 0])


def test_renorm_with_limits_one_and_zero_is_batch_norm_bit_for_bit():
    src, rows, p = _case(3)
    a, c = (torch.empty(src.shape[0], rows.numel(), src.shape[2]) for _ in range(2))
    batch_norm(src, rows, p, a, eps=EPS)
    batch_norm(src, rows, p, c, eps=EPS, renorm=True, limits=(1.0, 0.0))
    assert torch.equal(a, c)


def test_in_place_over_rows_in_order_equals_a_separate_output():
    src, _, p = _case(4)
    m, n, f = src.shape
    rows = torch.arange(n).view(8, n // 8)
    apart = torch.empty_like(src)
    batch_norm(src, rows, p, apart, eps=EPS, relu=False)
    batch_norm(src, rows, p, src, eps=EPS, relu=False)
    assert torch.equal(src, apart)


def test_bad_shapes_are_refused_before_any_work():
    src, rows, p = _case(5)
    out = torch.zeros(src.shape[0], 7, src.shape[2])
    with pytest.raises(ValueError, match="rows per model"):
        batch_norm(src, rows, p, out, eps=EPS)
    with pytest.raises(ValueError, match="at least 2 rows"):
        batch_norm(src, rows[:, :1], p, out, eps=EPS)
    assert not out.any()
