"""Simulated machines: environment variables that make every library pick the kernels of a lesser CPU.

Each machine is a set of environment variables added to a run's environment
(:func:`environments`): they cap the instruction set PyTorch (``ATEN_CPU_CAPABILITY``),
oneDNN, MKL, OpenBLAS, NumPy (``NPY_DISABLE_CPU_FEATURES``), Numba
(``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``) and glibc (``GLIBC_TUNABLES``)
dispatch on. Only features this machine has can be masked, so they are read here,
at run time. :mod:`bnstudy.pipeline.determinism` runs the test config on each.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

AVX512_GLIBC = ("AVX512F", "AVX512CD", "AVX512BW", "AVX512DQ", "AVX512ER", "AVX512PF", "AVX512VL")
# glibc >= 2.33 names its features as below (``-AVX2``); 2.26-2.32 as ``-AVX2_Usable``.
GENERIC_GLIBC = ("AVX", "AVX2", "FMA", "FMA4", "BMI1", "BMI2", "LZCNT", "MOVBE") + AVX512_GLIBC
GENERIC_NUMPY = ("AVX", "F16C", "FMA3", "AVX2", "X86_V3")  # X86_V3: NumPy >= 2.4 dispatches by level


def numpy_cpu() -> tuple[dict[str, bool], set[str], list[str]]:
    """NumPy's CPU features of this machine (as seen by this process), its baseline and dispatch targets."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1
        from numpy.core import _multiarray_umath as umath
    return dict(umath.__cpu_features__), set(umath.__cpu_baseline__), list(umath.__cpu_dispatch__)


def numpy_disable(names) -> list[str]:
    """Of ``names``, the NumPy dispatch targets this machine has: what NPY_DISABLE_CPU_FEATURES may list.

    NumPy refuses to disable a baseline feature and ignores (with an
    ImportWarning) names it does not dispatch on.
    """
    features, baseline, dispatch = numpy_cpu()
    return [n for n in dispatch if n in names and features.get(n) and n not in baseline]


def glibc_hwcaps(names) -> str:
    """The ``GLIBC_TUNABLES`` value masking ``names`` (glibc's spelling for its version)."""
    version = tuple(int(x) for x in (platform.libc_ver()[1] or "2.36").split(".")[:2])
    suffix = "_Usable" if version < (2, 33) else ""
    return "glibc.cpu.hwcaps=" + ",".join(f"-{n}{suffix}" for n in names)


def numba_features_without_avx512() -> str | None:
    """The host's LLVM features with every AVX512 (and AMX, AVX10) feature off; None without llvmlite.

    NUMBA_CPU_NAME alone keeps the host's features, AVX512 included.
    """
    try:
        import llvmlite.binding as ll
    except ImportError:
        return None
    flags = ll.get_host_cpu_features().flatten().split(",")
    wide = ("avx512", "amx", "avx10")
    return ",".join("-" + f[1:] if f[1:].startswith(wide) else f for f in flags if f)


def environments() -> dict[str, dict[str, str]]:
    """The simulated machines: name -> environment variables added to a run's environment."""
    features, _, _ = numpy_cpu()
    avx512 = [n for n in features if n.startswith("AVX512")] + ["X86_V4"]
    avx2 = {
        "ATEN_CPU_CAPABILITY": "avx2",
        "NUMBA_CPU_NAME": "haswell",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "OPENBLAS_CORETYPE": "Haswell",
        "GLIBC_TUNABLES": glibc_hwcaps(AVX512_GLIBC),
    }
    numba = numba_features_without_avx512()
    if numba is not None:
        avx2["NUMBA_CPU_FEATURES"] = numba
    generic = {
        "ATEN_CPU_CAPABILITY": "default",
        "NUMBA_CPU_NAME": "generic",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "OPENBLAS_CORETYPE": "Nehalem",
        "GLIBC_TUNABLES": glibc_hwcaps(GENERIC_GLIBC),
    }
    for env, names in ((avx2, avx512), (generic, list(GENERIC_NUMPY) + avx512)):
        disable = numpy_disable(names)
        if disable:
            env["NPY_DISABLE_CPU_FEATURES"] = ",".join(disable)
    return {"native": {}, "avx2": avx2, "generic": generic}


def describe_environment(extra: dict[str, str]) -> dict[str, str]:
    """What a process started with ``extra`` added to its environment runs on
    (:func:`bnstudy.pipeline.provenance.machine_description`, run in that process)."""
    src = str(Path(__file__).resolve().parents[2])
    code = (
        f"import json, sys; sys.path.insert(0, {src!r})\n"
        "from bnstudy.pipeline import provenance\n"
        "print(json.dumps(provenance.machine_description()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=os.environ | extra
    )
    if out.returncode != 0:
        raise RuntimeError(f"describing the environment failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout)


def summary(description: dict[str, str]) -> str:
    keys = ("torch CPU kernels", "NumPy SIMD", "BLAS kernels", "Numba target", "glibc")
    return "; ".join(f"{k}: {description.get(k, '?')}" for k in keys)
