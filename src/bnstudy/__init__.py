"""Batch normalisation at training versus inference time: the science of the study.

Modules, one idea each:

- ``fixedmath``   exp, log and integer powers with the same bits on every machine
- ``blocks``      the building blocks of the compiled arithmetic (Linear, batch statistics, normalisations)
- ``kernels``     the network's forward arithmetic, compiled in one fixed order
- ``gradients``   one layer's training-mode forward pass and the backward passes, compiled
- ``optimisers``  the flat parameter vector and the Adam and SGD steps, compiled
- ``backprop``    the compiled training loop: whole runs, step after step
- ``model``       the MLP: stacks of NumPy arrays, initial weights, PyTorch modules for users
- ``recipe``      the training recipe and batch renormalisation's schedule
- ``batching``    the seeded batch order of every epoch
- ``train``       one run of a recipe per seed, through the compiled loop
- ``plain``       the plain PyTorch loop, the independent reference (tests, benchmark)
- ``torchnet``    the network as PyTorch functions on stacks (the tests' reference)
- ``norms``       normalisers as PyTorch functions (and the BatchRenorm1d, GhostBatchNorm1d modules)
- ``runtime``     threads and named random streams
- ``data``        the digits split and the enumerated synthetic population
- ``companions``, ``probes``  companion dependence of training-mode predictions
- ``tiled``       the probes' Linear layer with its outputs in registers, bit for bit ``linear_t``
- ``evaluation``, ``remedies`` study 2: accuracy by training batch size, and the remedies
- ``running_stats``, ``layer``, ``selfchecks``  the running-statistics study
- ``reference``   an independent NumPy BatchNorm1d
- ``stats``       bootstrap and seed intervals
- ``designs``     the studies' shared names and sizes (pure Python: what reports and figures import)
- ``config``      the config's checks, and the strict reading of a config file
- ``io``          byte-stable, atomic file writing
- ``manifest``    content hashes of pipeline outputs
- ``determinism``, ``machines``  the determinism and portability check, and its simulated machines
- ``codedeps``    the package modules each rule script can load (its code inputs)
- ``kernelcache`` where Numba files the compiled kernels (by code and machine, not by path)

Numba caches compiled kernels on disk, but it checks only the source file of the
function it compiled, not the files whose functions that code inlines. So the
cache lives in a directory named by a digest of every module that uses Numba
(under ``$XDG_CACHE_HOME/bnstudy``, by default ``~/.cache/bnstudy``): editing any
kernel compiles afresh instead of loading stale machine code, and copies of the
same code share one cache, filed by the machine compiled for and not by the
checkout's path (``kernelcache``). Set ``NUMBA_CACHE_DIR`` to choose another place.
"""

import hashlib
import os
from pathlib import Path

__version__ = "0.1.0"


def _numba_cache_dir() -> str:
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(here.glob("*.py")):
        text = path.read_bytes()
        if b"import numba" in text:
            digest.update(path.name.encode() + b"\0" + text)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bnstudy"
    return str(cache / f"numba-{digest.hexdigest()[:16]}")


os.environ.setdefault("NUMBA_CACHE_DIR", _numba_cache_dir())
# before Numba is imported (it reads the variable then): see bnstudy.kernelcache
os.environ.setdefault(
    "NUMBA_CACHE_LOCATOR_CLASSES",
    "bnstudy.kernelcache.KernelCacheLocator,InTreeCacheLocator,UserWideCacheLocator,IPythonCacheLocator,ZipCacheLocator",
)
