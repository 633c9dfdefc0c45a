"""Batch normalisation at training versus inference time: the science of the study.

Where to start reading: ``base.normalisers`` (every normaliser the study knows, declared once),
then one study, e.g. ``studies.batch_size``: its science computes, its summary and macros report,
its figure draws. The layers, each importing only the layers before it in this list:

- ``base``      configuration checks, the registry of normalisers, the catalogue of studies, the data
                sets' files, byte-stable I/O, statistics, fixed-bit elementary functions, seeds and
                thread settings (``runtime``)
- ``pipeline``  the pipeline's machinery, on ``base`` alone: the cost model (``plan``), the job server,
                each rule's code inputs (``codedeps``), the kernel cache, the build record (manifest,
                pins, provenance), the determinism check on simulated machines; the science imports
                it only in each study's ``cost.py`` and in ``studies.compare`` (which reads builds)
- ``compiled``  the Numba kernels in one fixed order (Linear blocks, reductions, every normaliser's
                arithmetic in ``normkernels``, both networks' forward passes, gradients, optimisers,
                the training loop ``backprop``, the probes, one batch-norm layer)
- ``nets``      the data split, the two networks as objects behind one interface (``nets.spec``'s
                ``Network``: the MLP's ``model.NetSpec`` and the convolutional ``conv_train.ConvSpec``;
                ``nets.network`` names them), recipes, the training loop both share (``train``),
                weights files, and the PyTorch forms the tests compare the compiled arithmetic with
- ``evaluation`` what the studies share: trained networks scored (``accuracy``), batch-norm
                statistics recomputed (``recompute``) and their ``distance`` from exact ones,
                seed-paired comparisons (``paired``), means in order (``means``); no study imports
                another (tests/architecture/test_study_imports.py)
- ``paper``     the figures' house style, LaTeX macros and tables, design macros, the pdfTeX build
- ``studies``   one folder per study: ``companions`` (study 1), ``batch_size`` (study 2 and the
                remedies), ``running_stats`` (studies 3 and 5), ``lr_sweep``, ``serving``,
                ``accumulation``, ``finetune``, ``conv``
- ``audit``     the audit of a user's own PyTorch model (imports PyTorch; the pipeline never does)
- ``tools``     the warm-up that compiles every kernel before the jobs, and the speed benchmark

tests/architecture/test_package_layering.py keeps that order.

The workflow's rule scripts (``workflow/scripts``) call these modules; ``pipeline.codedeps`` reads
their imports so that editing a module re-runs exactly the rules that can load it.

Numba caches compiled kernels on disk, but it checks only the source file of the
function it compiled, not the files whose functions that code inlines. So the
cache lives in a directory named by a digest of every module that uses Numba
(under ``$XDG_CACHE_HOME/bnstudy``, by default ``~/.cache/bnstudy``): editing any
kernel compiles afresh instead of loading stale machine code, and copies of the
same code share one cache, filed by the machine compiled for and not by the
checkout's path (``pipeline.kernelcache``). Set ``NUMBA_CACHE_DIR`` to choose another place.

Numba optimises at LLVM's level 2 here (``NUMBA_OPT``; Numba's default is 3; a value the user set
is kept). Level 3 spent 178 CPU s compiling every kernel and level 2 spends 111, with the same
speed of the compiled training, probes and convolutions within 2% (docs/speed.md, 2026-12-07). The
bits do not depend on the level: no optimisation may reorder floating-point arithmetic or fuse a
multiply and an add without fast-math, which no kernel asks for (tests/compiled/test_layer.py
compiles the batch-norm layer at levels 0, 2 and 3 and compares the bytes; the committed manifests,
made at level 3, were reproduced at 2). The level is part of the cache directory's digest, so code of
one level is never loaded for another. Where Numba was imported before this package, it is told to
read its variables again.
"""

import hashlib
import os
import sys
from pathlib import Path

__version__ = "0.1.0"
OPT_LEVEL = "2"  # Numba's optimisation level for the kernels (see above)


def _numba_cache_dir() -> str:
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(here.rglob("*.py")):
        text = path.read_bytes()
        if b"import numba" in text:
            digest.update(path.relative_to(here).as_posix().encode() + b"\0" + text)
    digest.update(b"NUMBA_OPT=" + os.environ.get("NUMBA_OPT", "3").encode())  # Numba's default: 3
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bnstudy"
    return str(cache / f"numba-{digest.hexdigest()[:16]}")


# before Numba compiles (its target machine reads the level once per process, its passes at each compile)
os.environ.setdefault("NUMBA_OPT", OPT_LEVEL)
os.environ.setdefault("NUMBA_CACHE_DIR", _numba_cache_dir())
# before Numba is imported (it reads the variable then): see bnstudy.pipeline.kernelcache
os.environ.setdefault(
    "NUMBA_CACHE_LOCATOR_CLASSES",
    "bnstudy.pipeline.kernelcache.KernelCacheLocator,InTreeCacheLocator,UserWideCacheLocator,IPythonCacheLocator,ZipCacheLocator",
)
if "numba.core.config" in sys.modules:  # Numba imported first: it reads these variables again now, before
    sys.modules["numba.core.config"].reload_config()  # the kernel modules' decorators set up its compiler
