"""bnstudy.compiled.bytype: kernels compiled once per argument type, not once per constant."""

import numba
import numpy as np
from numba.core import types

from bnstudy.compiled import convgemm
from bnstudy.compiled.bytype import typed_from
from bnstudy.compiled.convgemm import BIAS, MORE  # as the kernels name them: globals, typed as literals


def _literals(signature) -> list[int]:
    return [i for i, a in enumerate(signature) if isinstance(a, types.Literal)]


def test_constants_from_the_marked_position_on_share_one_compile_and_those_before_do_not():
    @numba.njit
    def plain(a, b):
        return a * 10 + b

    @typed_from(1)
    @numba.njit
    def marked(a, b):
        return a * 10 + b

    @numba.njit
    def caller():
        return plain(1, 2) + plain(1, 3) + marked(1, 2) + marked(1, 3) + marked(4, 5)

    assert caller() == 12 + 13 + 12 + 13 + 45
    assert len(plain.signatures) == 2  # Numba's way: one compile per constant value
    assert [_literals(s) for s in marked.signatures] == [[0], [0]]  # a=1 and a=4: position 0 stays literal
    assert {s[1] for s in marked.signatures} == {types.int64}


def test_gemm_keeps_its_mode_literal_and_its_tiles_take_positions_by_type():
    """gemm's mode selects the work in the loops (typed plainly, the MLP's step took twice the CPU);
    the tiles' row and column positions are read once, outside the loops. gemm and _rows are compiled
    here from their Python source (one loaded from the cache would not ask its callees for a type)."""
    gemm = numba.njit(error_model="numpy")(convgemm.gemm.py_func)
    rows = numba.njit(error_model="numpy")(convgemm._rows.py_func)

    @numba.njit
    def calls(a, b, start, c):
        gemm(a, None, b, start, c, BIAS, False, 8)  # tiles of 8 rows, then single rows; the 8 narrow columns
        gemm(a, None, b, start, c, MORE, False, 4)  # of 4 rows
        rows(a, None, b, start, c, MORE, 0, 8, 0, 32)  # every tile, asked with constant positions
        rows(a, None, b, start, c, MORE, 0, 4, 0, 32)
        rows(a, None, b, start, c, MORE, 8, 1, 0, 32)

    rng = np.random.default_rng(0)
    a = rng.standard_normal((9, 5)).astype(np.float32)
    b = rng.standard_normal((5, 40)).astype(np.float32)
    start = rng.standard_normal(40).astype(np.float32)
    c = np.empty((9, 40), np.float32)
    calls(a, b, start, c)
    products = a.astype(np.float64) @ b.astype(np.float64)
    expect = start + 2 * products
    expect[:, :32] += products[:, :32] * np.array([2, 2, 2, 2, 1, 1, 1, 1, 1])[:, None]  # the three calls of rows
    np.testing.assert_allclose(c, expect, rtol=1e-4, atol=1e-4)
    assert all(5 in _literals(s) for s in gemm.signatures)  # mode, the sixth argument
    # (a, idx, b, start, c, mode, row, ...): from the row on, by type
    for name in ("_rows", "_narrow", "_tile8x2", "_tile8x1", "_tile4x1", "_tile1x4", "_tile1x1"):
        kernel = getattr(convgemm, name)
        assert kernel.signatures, name
        for s in kernel.signatures:
            assert all(i < 6 for i in _literals(s)), (name, s)
