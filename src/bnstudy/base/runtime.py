"""Deterministic compute settings shared by every job.

PyTorch results depend on the number of intra-op threads (reductions are split
differently), so each job fixes its own thread count: its rule's ``threads:``
(config ``compute_threads`` for training, 1 elsewhere), whatever ``--cores``
Snakemake was given. The pipeline's outputs come from the fixed-order kernels and
are the same bytes for any thread count.
"""

from __future__ import annotations

import os

import numpy as np


def configure(threads: int = 1, torch: bool = True) -> None:
    """Fix the compute threads (BLAS and OpenMP) and, with ``torch``, PyTorch's settings.

    PyTorch's intra-op threads, one inter-op thread, deterministic algorithms,
    float32 by default. ``torch=False`` is for jobs that never use PyTorch: they
    start about 1.5 s sooner, and should one import it all the same, it reads the
    thread count from the environment set here.
    """
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    if not torch:
        return
    import torch as pytorch

    pytorch.set_num_threads(threads)
    try:
        pytorch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process
        pass
    pytorch.use_deterministic_algorithms(True)
    pytorch.set_default_dtype(pytorch.float32)


def derive_seed(*keys: int) -> int:
    """A 63-bit seed derived from integer keys, e.g. (seed, stream)."""
    state = np.random.SeedSequence(list(keys)).generate_state(2, dtype=np.uint32)
    return int((int(state[0]) << 31) ^ int(state[1])) & ((1 << 63) - 1)


# Named random streams: one seed gives independent streams for each purpose.
STREAM_INIT = 1
STREAM_ORDER = 2
STREAM_PROBE = 3
STREAM_BOOTSTRAP = 4
STREAM_EVAL_BATCHES = 5
STREAM_POPULATION = 6
