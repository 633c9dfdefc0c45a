"""What a build ran on: package versions, config and output digests, machine, runtimes.

Versions, digests, CPU model, the instruction set of PyTorch's CPU kernels and
thread settings are the same on every build of one config on one machine, so
they go into the paper. Per-rule runtimes differ on
every run; they go into a separate build record that, like logs and benchmark
files, is kept out of the hash manifest.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import pandas as pd

PACKAGES = ("torch", "numpy", "numba", "scipy", "pandas", "scikit-learn", "matplotlib", "safetensors", "snakemake")


def config_digest(config: dict) -> str:
    """sha256 of the config as canonical JSON (sorted keys, no spaces)."""
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


def numerics_fingerprint() -> str:
    """16 hex digits naming how this machine's PyTorch rounds the study's computations.

    The SHA-256 of the bytes of a small fixed computation through the kernels the
    pipeline uses: two batch-norm networks trained in lockstep for 32 steps on
    batches of 2 (batched matrix products, the batch-norm kernels forward and
    backward, the fused Adam kernel), then the probes' normaliser for batch, layer
    and group norm. Machines that give the same digest round alike, and give the
    same bytes for the same config; a different digest means other kernels (an
    other instruction set or library build), whose results agree only up to
    rounding and what training makes of it.
    """
    import torch

    from . import model as mlp
    from . import train
    from .companions import normalise_batches_

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(64, 64, generator=g), torch.randint(10, (64,), generator=g)
    spec = mlp.NetSpec("batchnorm")
    stacked, _ = train.train_lockstep(spec, train.Recipe(batch_size=2, epochs=1), [0, 1], x, y)
    digest = hashlib.sha256()
    for key in sorted(stacked):
        digest.update(stacked[key].numpy().tobytes())
    h = torch.randn(2, 8, 16, 128, generator=g)
    p = {"weight": torch.rand(2, 128, generator=g), "bias": torch.randn(2, 128, generator=g)}
    for kind in ("batchnorm", "layernorm", "groupnorm"):
        digest.update(normalise_batches_(kind, h.clone(), p, groups=8).numpy().tobytes())
    return digest.hexdigest()[:16]


def compute_settings(compute_threads: int) -> dict[str, str]:
    import torch

    # The vector instruction set PyTorch's CPU kernels dispatch to: float rounding,
    # and so the bytes of trained weights, can differ between AVX2 and AVX512 machines.
    return {"compute threads (config)": str(compute_threads),
            "torch intra-op threads": str(torch.get_num_threads()),
            "deterministic algorithms": str(torch.are_deterministic_algorithms_enabled()),
            "torch CPU kernels": torch.backends.cpu.get_cpu_capability(),
            "numerics fingerprint": numerics_fingerprint()}


def runtimes(benchmark_files) -> pd.DataFrame:
    """Per-rule wall time from Snakemake ``benchmark:`` files: jobs, total and median seconds, peak RSS."""
    rows = []
    for path in map(Path, benchmark_files):
        table = pd.read_csv(path, sep="\t")
        rule = path.parent.name if path.parent.name != "benchmarks" else path.stem
        rows.append({"rule": rule, "s": float(table["s"].iloc[0]),
                     "max_rss_mb": pd.to_numeric(table["max_rss"], errors="coerce").iloc[0]})
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=["rule", "jobs", "total_s", "median_s", "max_rss_mb"])
    return (df.groupby("rule", sort=True)
              .agg(jobs=("s", "size"), total_s=("s", "sum"), median_s=("s", "median"),
                   max_rss_mb=("max_rss_mb", "max"))
              .reset_index())
