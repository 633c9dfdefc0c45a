"""Elementary functions with the same bits on every machine.

The study's outputs must not depend on the CPU that computed them. Addition,
subtraction, multiplication, division and square root are correctly rounded by
IEEE 754 on every CPU, so any fixed sequence of them gives the same bits
everywhere. ``exp``, ``log`` and ``pow`` are not: glibc's ``libm`` picks an FMA or
a plain variant at run time, NumPy dispatches its own SIMD versions by CPU
feature, and none of them is correctly rounded. So every ``exp``, ``log`` and
integer power whose result reaches an output is computed here, from the four
operations, ``sqrt`` and exact scalings by powers of two (``ldexp``/``frexp``,
which are exact by definition), in the order written below.

The rules every compiled kernel of the package follows (see :mod:`bnstudy.compiled.kernels`):

- no fast-math, so the compiler neither reorders nor fuses (no FMA contraction:
  ``tests/test_fixedmath.py`` checks the machine code);
- every reduction in one documented order, vectorised only across independent
  outputs (a wider vector unit computes more outputs at once, each in the same order);
- ``exp`` and ``log`` from this module.

Accuracy (float64): ``exp`` and ``log`` are within 3 units in the last place of
the true value over the ranges the study uses (checked against ``math`` in the
tests); they are not correctly rounded, but they are the same everywhere.
"""

from __future__ import annotations

import math

import numba
import numpy as np

JIT = {"cache": True, "nogil": True, "error_model": "numpy"}

# ln 2 split in two: LN2_HI has its low 32 bits zero, so k * LN2_HI is exact for |k| < 2**20.
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
INV_LN2 = 1.44269504088896338700e00
SQRT_HALF = 0.70710678118654752440
EXP_MAX = 709.0  # exp(x) overflows beyond about 709.78
EXP_MIN = -745.2  # and underflows to 0 below about -745.13


@numba.njit(**JIT)
def exp(x: float) -> float:
    """``e**x`` in float64: ``x = k ln 2 + r`` with ``|r| <= ln 2 / 2``, then a
    degree-13 Taylor polynomial of ``e**r`` by Horner's rule, scaled by ``2**k``."""
    if x != x:
        return x
    if x > EXP_MAX:
        return math.inf
    if x < EXP_MIN:
        return 0.0
    k = math.floor(x * INV_LN2 + 0.5)
    r = (x - k * LN2_HI) - k * LN2_LO
    p = 1.0 / 6227020800.0  # 1/13!
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    return math.ldexp(p, int(k))


@numba.njit(**JIT)
def log(x: float) -> float:
    """Natural logarithm in float64: ``x = m 2**e`` with ``m`` in ``[sqrt(1/2), sqrt(2))``,
    ``log m = 2 atanh(f)``, ``f = (m - 1) / (m + 1)``, by its odd series to ``f**23``."""
    if x != x or x < 0.0:
        return math.nan
    if x == 0.0:
        return -math.inf
    if x == math.inf:
        return x
    m, e = math.frexp(x)  # x = m * 2**e, m in [0.5, 1)
    if m < SQRT_HALF:
        m = m * 2.0
        e -= 1
    f = (m - 1.0) / (m + 1.0)
    s = f * f
    p = 1.0 / 23.0
    p = p * s + 1.0 / 21.0
    p = p * s + 1.0 / 19.0
    p = p * s + 1.0 / 17.0
    p = p * s + 1.0 / 15.0
    p = p * s + 1.0 / 13.0
    p = p * s + 1.0 / 11.0
    p = p * s + 1.0 / 9.0
    p = p * s + 1.0 / 7.0
    p = p * s + 1.0 / 5.0
    p = p * s + 1.0 / 3.0
    p = p * s + 1.0
    return e * LN2_HI + (e * LN2_LO + 2.0 * f * p)


@numba.njit(**JIT)
def powi(x: float, n: int) -> float:
    """``x**n`` for an integer ``n >= 0`` by binary exponentiation (squarings from the
    lowest bit of ``n`` up, the result multiplied in as each set bit is reached)."""
    if n < 0:
        raise ValueError("powi needs n >= 0")
    result = 1.0
    base = x
    while n > 0:
        if n & 1:
            result = result * base
        base = base * base
        n >>= 1
    return result


@numba.njit(**JIT)
def exp_array(x: np.ndarray) -> np.ndarray:
    """:func:`exp` of every element (float64), any shape."""
    flat = x.ravel()
    out = np.empty(flat.size, np.float64)
    for i in range(flat.size):
        out[i] = exp(flat[i])
    return out.reshape(x.shape)


@numba.njit(**JIT)
def log_array(x: np.ndarray) -> np.ndarray:
    """:func:`log` of every element (float64), any shape."""
    flat = x.ravel()
    out = np.empty(flat.size, np.float64)
    for i in range(flat.size):
        out[i] = log(flat[i])
    return out.reshape(x.shape)
