"""What a build ran on: package versions, config and output digests, machine, runtimes.

Package versions and the config and output digests are the same on every build
of one config, on any machine, so they go into the hashed outputs and the
paper. The machine (CPU model and flags, the kernels each library selects,
threads) and per-rule runtimes are not: they go into the build record under
``results/provenance/``, which, like logs and benchmark files, is kept out of
the hash manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import pandas as pd

PACKAGES = (
    "torch",
    "numpy",
    "numba",
    "llvmlite",
    "scipy",
    "pandas",
    "scikit-learn",
    "matplotlib",
    "safetensors",
    "snakemake",
)


def config_digest(config: dict) -> str:
    """sha256 of the config as canonical JSON (sorted keys, no spaces). A ``data`` section that
    names only the default data set (``{name: digits}``) is left out: the same experiment as
    a config without one, with the digest it had before the data set was a key."""
    if config.get("data") == {"name": "digits"}:
        config = {k: v for k, v in config.items() if k != "data"}
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    try:
        first = subprocess.run(["pdflatex", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        versions["pdftex"] = first.split("(")[0].replace("pdfTeX", "").strip() or first
    except (FileNotFoundError, IndexError):
        versions["pdftex"] = "not found"
    return versions


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags(names=("avx", "avx2", "fma", "f16c", "avx512f")) -> str:
    """Which of ``names`` the CPU reports (``/proc/cpuinfo``), space-separated."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                return " ".join(n for n in names if n in have) or "none of " + " ".join(names)
    except OSError:
        pass
    return "unknown"


# glibc's view of the CPU (``ld.so --list-diagnostics``, glibc >= 2.33): the CPUID
# bits it found and those it treats as usable, after GLIBC_TUNABLES' masking.
# (CPUID leaf index in glibc's table, register index eax..edx, bit).
GLIBC_FEATURE_BITS = {"AVX": (0, 2, 28), "FMA": (0, 2, 12), "AVX2": (1, 1, 5), "AVX512F": (1, 1, 16)}
LD_SO = Path("/lib64/ld-linux-x86-64.so.2")


def glibc_cpu_features(env: dict | None = None, ld_so: Path = LD_SO) -> dict[str, tuple[bool, bool]] | None:
    """``{feature: (reported by the CPU, usable for glibc)}`` in a process with ``env``; None if unknown."""
    try:
        out = subprocess.run(
            [str(ld_so), "--list-diagnostics"], capture_output=True, text=True, env=env, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    values = {}
    for line in out.splitlines():
        key, _, value = line.partition("=")
        if key.startswith("x86.cpu_features.features["):
            values[key] = int(value, 16)
    found = {}
    for name, (index, reg, bit) in GLIBC_FEATURE_BITS.items():
        cpuid = values.get(f"x86.cpu_features.features[{index:#x}].cpuid[{reg:#x}]")
        active = values.get(f"x86.cpu_features.features[{index:#x}].active[{reg:#x}]")
        if cpuid is None or active is None:
            return None
        found[name] = (bool(cpuid >> bit & 1), bool(active >> bit & 1))
    return found


# Environment variables that select CPU kernels (the simulated machines of
# bnstudy.pipeline.determinism set them).
KERNEL_VARIABLES = (
    "ATEN_CPU_CAPABILITY",
    "NUMBA_CPU_NAME",
    "NUMBA_CPU_FEATURES",
    "MKL_ENABLE_INSTRUCTIONS",
    "ONEDNN_MAX_CPU_ISA",
    "NPY_DISABLE_CPU_FEATURES",
    "OPENBLAS_CORETYPE",
    "GLIBC_TUNABLES",
)


def numpy_simd() -> str:
    """NumPy's SIMD targets in use: its baseline, then the dispatched ones enabled here."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1
        from numpy.core import _multiarray_umath as umath
    enabled = [t for t in umath.__cpu_dispatch__ if umath.__cpu_features__.get(t)]
    return " ".join(umath.__cpu_baseline__) + "; dispatched: " + (" ".join(enabled) or "none")


def blas_kernels() -> str:
    """The kernel set of every loaded BLAS (OpenBLAS names its core type)."""
    try:
        import threadpoolctl
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    found = sorted(
        {
            f"{i['internal_api']} {i.get('architecture') or '?'}"
            for i in threadpoolctl.threadpool_info()
            if i.get("user_api") == "blas"
        }
    )
    return ", ".join(found) or "none loaded"


def numba_target() -> str:
    """The CPU Numba compiles for, and which vector features it may use."""
    try:
        import llvmlite.binding as ll
        from numba.core import config
    except ImportError:
        return "numba not installed"
    name = config.CPU_NAME or ll.get_host_cpu_name()
    features = config.CPU_FEATURES if config.CPU_FEATURES is not None else ll.get_host_cpu_features().flatten()
    on = {f[1:] for f in features.split(",") if f.startswith("+")}
    wanted = ("avx", "avx2", "fma", "avx512f")
    return f"{name} ({' '.join(f for f in wanted if f in on) or 'no AVX/FMA'})"


def machine_description(compute_threads: int | None = None, torch: bool = True) -> dict[str, str]:
    """What this process runs on, and the kernels each library selects: not the same on every machine.

    For the build record (``results/provenance/``, kept out of the hash
    manifest like the runtimes), never for hashed outputs or the paper. No host
    name. ``torch=False``: PyTorch's kernels are not asked (importing it costs about 1.4 CPU s, and
    no pipeline job computes with it); the record says so.
    """
    glibc = glibc_cpu_features()
    usable = (
        "usable: "
        + (" ".join(n for n, (_, ok) in glibc.items() if ok) or "none")
        + "; masked: "
        + (" ".join(n for n, (cpu, ok) in glibc.items() if cpu and not ok) or "none")
        if glibc is not None
        else "unknown"
    )
    out = {} if compute_threads is None else {"compute threads (config)": str(compute_threads)}
    out |= {
        "CPU model": cpu_model(),
        "CPU flags": cpu_flags(),
        "CPUs available": str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()),
        "glibc": f"{platform.libc_ver()[1] or 'unknown'} ({usable})",
        "NumPy SIMD": numpy_simd(),
        "BLAS kernels": blas_kernels(),
        "Numba target": numba_target(),
    }
    if not torch:
        out["torch CPU kernels"] = "not asked: no job computes with PyTorch"
    else:
        try:
            import torch as pytorch
        except ImportError:
            out["torch CPU kernels"] = "torch not installed"
        else:
            out["torch CPU kernels"] = pytorch.backends.cpu.get_cpu_capability()
            out["torch intra-op threads"] = str(pytorch.get_num_threads())
    out["kernel-selection variables"] = (
        " ".join(f"{v}={os.environ[v]}" for v in KERNEL_VARIABLES if os.environ.get(v)) or "none"
    )
    return out


def job_log(benchmark) -> Path:
    """The log of the job whose benchmark file is ``benchmark`` (``results/benchmarks/<rule>[/<w>].tsv``
    -> ``results/logs/<rule>[/<w>].log``: the workflow's ``bench_for`` and ``log_for``)."""
    path = Path(benchmark)
    parts = list(path.parts)
    parts[len(parts) - 1 - parts[::-1].index("benchmarks")] = "logs"
    return Path(*parts).with_suffix(".log")


def job_usage(benchmark, table=None) -> tuple[float, float]:
    """A job's ``(cpu_s, max_rss_mb)``: from its log's job-server line when a fork of the job server
    ran its script (the benchmark file then measured only the job's own, waiting process), else
    from the benchmark file (``cpu_time`` as Snakemake sampled it, ``max_rss``)."""
    from bnstudy.pipeline.jobserver import usage_in_log

    recorded = usage_in_log(job_log(benchmark))
    if recorded is not None:
        return recorded
    table = pd.read_csv(benchmark, sep="\t") if table is None else table
    cpu = pd.to_numeric(table["cpu_time"], errors="coerce").iloc[0]
    return float(cpu), float(pd.to_numeric(table["max_rss"], errors="coerce").iloc[0])


def runtimes(benchmark_files) -> pd.DataFrame:
    """Per-rule wall time from Snakemake ``benchmark:`` files: jobs, total and median seconds, peak
    RSS (of the job's script: :func:`job_usage`)."""
    rows = []
    for path in map(Path, benchmark_files):
        table = pd.read_csv(path, sep="\t")
        rule = path.parent.name if path.parent.name != "benchmarks" else path.stem
        rows.append({"rule": rule, "s": float(table["s"].iloc[0]), "max_rss_mb": job_usage(path, table)[1]})
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=["rule", "jobs", "total_s", "median_s", "max_rss_mb"])
    return (
        df.groupby("rule", sort=True)
        .agg(jobs=("s", "size"), total_s=("s", "sum"), median_s=("s", "median"), max_rss_mb=("max_rss_mb", "max"))
        .reset_index()
    )
