"""Where Numba files the compiled kernels: by their code and the machine compiled for, not by the checkout's path.

Numba's own locator for a cache directory (``NUMBA_CACHE_DIR``) files a module's kernels under a
digest of the directory the source file lies in, so every copy of the workflow (a fresh clone, each
determinism run, the SLURM test's copy, each re-run test's copy) compiles every kernel again: about
40-70 CPU s each time on the 2-core development machine, several times in one ``make test``.

:class:`KernelCacheLocator` files this package's kernels under the package-relative directory
instead, below a directory named by the machine code's target (the CPU name and feature string
Numba compiles for, ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` or the host's). That is safe because
what decides the machine code is already in the path: ``bnstudy`` chooses ``NUMBA_CACHE_DIR`` by a
digest of every module that uses Numba (so an edit anywhere compiles afresh), Numba checks each
source file's content hash before it loads an entry, and each target has directory and files of its
own (two processes compiling for two simulated machines never write the same file; two compiling
for one target write the same machine code). Functions of other packages keep Numba's default.

Selected with Numba's ``NUMBA_CACHE_LOCATOR_CLASSES`` (set by importing ``bnstudy``, unless set:
this class in place of Numba's user-provided one, then Numba's other default locators).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
from pathlib import Path

from numba.core import config
from numba.core.caching import UserProvidedCacheLocator

PACKAGE = Path(__file__).resolve().parents[1]


@functools.cache
def target() -> str:
    """``<cpu name>-<digest of the feature string>``: what Numba compiles for in this process (fixed
    for its life: Numba reads ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` once; asked once, not once per
    kernel, as asking LLVM for the host's features costs about 1 ms and a job imports about 110 kernels)."""
    from llvmlite import binding
    from numba.core.codegen import get_host_cpu_features

    name = config.CPU_NAME or binding.get_host_cpu_name()
    features = config.CPU_FEATURES if config.CPU_FEATURES is not None else get_host_cpu_features()
    return f"{name}-{hashlib.sha256(features.encode()).hexdigest()[:12]}"


class KernelCacheLocator(UserProvidedCacheLocator):
    """Numba's locator for ``NUMBA_CACHE_DIR``, with this package's files filed by target and
    package-relative directory (``<cache dir>/<target>/bnstudy[/audit]``)."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        source = Path(os.path.abspath(py_file)).parent
        if source == PACKAGE or PACKAGE in source.parents:
            relative = source.relative_to(PACKAGE.parent)
            self._cache_path = os.path.join(config.CACHE_DIR, target(), *relative.parts)


@contextlib.contextmanager
def one_warm_up(say=print):
    """Hold this machine's warm-up lock (``<cache dir>/<target>.warm-up.lock``, an ``flock``) for the
    ``with`` block. Numba has no lock of its own: two processes that compile one kernel both compile
    it, and the later rename wins. So a second warm-up of the same cache for the same machine waits
    here (saying so) until the first ends, then loads what it compiled. The lock goes with the
    process that holds it, killed or not. ``say`` receives a line once the lock is held (``make
    test``'s script starts the suite when it has seen it: the suite's own warm-up then waits)."""
    path = Path(config.CACHE_DIR) / f"{target()}.warm-up.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"{WAITING}({path})")
            fcntl.flock(lock, fcntl.LOCK_EX)
        say(f"{WARMING}{target()}")
        yield


WARMING = "bnstudy: warming up the kernels for "  # one_warm_up's line once it holds the lock
WAITING = "bnstudy: waiting for another warm-up of these kernels "  # its line while another holds it


# A warm-up that compiled (or loaded) every kernel of a network leaves a mark beside its lock
# (``<cache dir>/<target>.warmed-<digest of what>``). The next warm-up of the same kernels then loads
# them in one process instead of splitting the work over several: a split pays for its processes'
# imports and loads each (3.3 CPU s against 1.6 for the MLP's kernels on the development machine), and
# a workflow's warm-up runs at every Snakemake start. The mark only chooses how many processes load;
# the kernels are still loaded, and a damaged or missing one is still healed or compiled.
MARK = ".warmed-"  # in every mark's file name, after the machine it is of


def _mark(what: str) -> Path:
    return Path(config.CACHE_DIR) / f"{target()}{MARK}{hashlib.sha256(what.encode()).hexdigest()[:12]}"


def warmed(what: str) -> bool:
    """Whether a warm-up of ``what`` (a network and its layout) completed in this machine's cache."""
    return _mark(what).is_file()


def mark_warmed(*whats: str) -> None:
    """Mark the warm-ups of ``whats`` complete in this machine's cache."""
    for what in whats:
        path = _mark(what)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(what + "\n")


def forget_warm_ups() -> None:
    """Remove this machine's marks (its cache lost kernels: the next warm-up splits its work again)."""
    for path in Path(config.CACHE_DIR).glob(f"{target()}{MARK}*"):
        path.unlink(missing_ok=True)
