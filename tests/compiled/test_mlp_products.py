"""The MLP's training step computes its linear maps with ``convgemm.gemm`` where the columns come
in 16s (``passes.linear_forward``, ``passes.linear_grads``): the same bits as ``blocks.linear_t``
and ``gradients.linear_backward``, the arithmetic they state, at every batch size and width."""

from __future__ import annotations

import numpy as np
import pytest

from bnstudy.compiled import blocks, gradients, passes
from test_convspeed import values

F32 = np.float32

# (outputs, inputs): the digits MLP's three layers, a Fashion first layer, and widths not in 16s
SHAPES = [(128, 64), (128, 128), (10, 128), (128, 784), (48, 32), (20, 12), (16, 7)]
ROWS = [2, 3, 5, 8, 13, 64]


def _values(rng, shape):
    """:func:`test_convspeed.values` with a fifth of zeros and a twentieth of negative zeros."""
    return values(rng, shape, zero_below=0.2, negative_zero_below=0.25)


@pytest.mark.parametrize("n", ROWS)
@pytest.mark.parametrize(("o", "k"), SHAPES)
def test_linear_forward_is_linear_t(n, o, k):
    rng = np.random.default_rng(n * 1000 + o + k)
    a = _values(rng, (n + 2, k))  # rows past n are not read
    wt = np.ascontiguousarray(_values(rng, (o, k)).T)
    bias = _values(rng, o)
    want = np.full((n + 2, o), 7, F32)
    got = want.copy()
    blocks.linear_t(a[:n], wt, bias, want)
    passes.linear_forward(a, n, wt, bias, got)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("n", ROWS)
@pytest.mark.parametrize(("o", "k"), SHAPES)
@pytest.mark.parametrize("input_grad", [True, False])
def test_linear_grads_is_linear_backward(n, o, k, input_grad):
    rng = np.random.default_rng(n * 1000 + o + k + input_grad)
    dh, a, w = _values(rng, (n + 2, o)), _values(rng, (n + 2, k)), _values(rng, (o, k))
    out = []
    for run in (gradients.linear_backward, passes.linear_grads):
        dw, db = np.full((o, k), 7, F32), np.full(o, 7, F32)
        da = np.full((n + 2, k if input_grad else 0), 7, F32)
        if run is gradients.linear_backward:
            run(dh, a, n, w, dw, db, da, a)
        else:
            run(dh, a, n, w, dw, db, da)
        out.append((dw.tobytes(), db.tobytes(), da[:n].tobytes()))
    assert out[0] == out[1]


def test_a_product_in_another_order_would_show():
    """The comparison can fail: the first layer's weight gradient summed over the rows backwards
    differs from the kernel's in some bits."""
    rng = np.random.default_rng(0)
    n, o, k = 64, 128, 64
    dh, a = _values(rng, (n, o)), _values(rng, (n, k))
    dw, db = np.empty((o, k), F32), np.empty(o, F32)
    passes.linear_grads(dh, a, n, np.zeros((o, k), F32), dw, db, np.empty((n, 0), F32))
    backwards = np.empty_like(dw)
    passes.linear_grads(dh[::-1].copy(), a[::-1].copy(), n, np.zeros((o, k), F32), backwards, db, np.empty((n, 0), F32))
    assert dw.tobytes() != backwards.tobytes()


def test_a_product_short_of_inputs_is_refused():
    """Without an index array gemm reads ``a``'s first columns in place: an ``a`` with fewer columns
    than the layer has inputs raises, never reads past its rows."""
    from bnstudy.compiled import convgemm

    a, wt = np.ones((2, 63), F32), np.ones((64, 16), F32)
    with pytest.raises(ValueError, match="at least as many columns"):
        convgemm.gemm(a, None, wt, np.zeros(16, F32), np.empty((2, 16), F32), convgemm.BIAS)
    with pytest.raises(ValueError, match="at least as many columns"):
        passes.linear_forward(a, 2, wt, np.zeros(16, F32), np.empty((2, 16), F32))
