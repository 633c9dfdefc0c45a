"""Kernels compiled once per argument type, not once per constant a caller passes.

Numba types a constant argument of a call between compiled functions as a literal
(``Literal[int](0)``, not ``int64``) and compiles the callee once per literal value. For a
value that selects the work (:func:`bnstudy.compiled.convgemm.gemm`'s ``mode``, a flag tested in
an inner loop) that second compile pays: the compiler drops the branches not taken, and the
training step of the MLP at batch 2 took twice the CPU when ``gemm``'s arguments were typed
plainly. For an index or a size read once, outside the loops, it buys nothing: ``gemm``'s
row and column tiles were compiled twice each for a column start of ``0`` against any start,
and every compile of a tile compiles its callees again.

:func:`typed_from` marks a kernel whose arguments from a position on are resolved by their
types alone: a call from compiled code with a constant there compiles (or reuses) the kernel
for the constant's type. The arithmetic is the same either way (the same operations in the
same order; only branches a constant would have decided remain), so the bits are too; the
warm-up compiles 193 signatures instead of 223 and about 10% less CPU (``docs/speed.md``).
Only calls from compiled code are affected: a call from Python types its arguments plainly anyway.
"""

from __future__ import annotations

import numba.core.types as types  # spelt so: the kernel cache is filed by every module that says "import numba"


def typed_from(first: int):
    """Decorator for a compiled kernel (put it above ``@numba.njit``): calls from compiled code
    resolve positional arguments ``first, first + 1, ...`` by type, never by a constant's value
    (keyword arguments are left as Numba types them)."""

    def mark(kernel):
        resolve = kernel.get_call_template  # what Numba's typing asks a compiled callee for its call

        def get_call_template(args, kws):
            plain = tuple(types.unliteral(a) if i >= first else a for i, a in enumerate(args))
            return resolve(plain, kws)

        kernel.get_call_template = get_call_template
        return kernel

    return mark
