"""Common start of every rule script: log to the rule's log file, fix compute settings."""

import logging
import sys
from pathlib import Path


def _blas_bindings_alone() -> None:
    """Load SciPy's BLAS bindings (``scipy.linalg.cython_blas``) without ``scipy.linalg``'s package.

    Numba imports ``scipy.linalg.cython_blas`` when it sets up its NumPy support (before loading
    any cached kernel), to offer ``np.dot``; as a submodule that first runs ``scipy.linalg``'s
    ``__init__``, about 0.3 CPU s of imports no job uses. The extension module loaded by itself
    is the same module, with the same BLAS functions; should anything import ``scipy.linalg``
    later, it finds it in ``sys.modules``. Where SciPy is laid out otherwise, nothing is done.
    """
    name = "scipy.linalg.cython_blas"
    if name in sys.modules or "scipy.linalg" in sys.modules:
        return
    import importlib.machinery
    import importlib.util

    try:
        import scipy

        linalg = Path(scipy.__file__).parent / "linalg"
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = linalg / f"cython_blas{suffix}"
            if path.is_file():
                break
        else:
            return
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except Exception:  # any surprise: leave it to Numba's own import
        sys.modules.pop(name, None)


class _BlasBeforeNumbasNumPy:
    """An import hook that loads the BLAS bindings alone (:func:`_blas_bindings_alone`) just before
    Numba's NumPy support (``numba.np.arraymath``) is imported, so only jobs that use Numba load them;
    it finds nothing itself and removes itself."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname == "numba.np.arraymath":
            if cls in sys.meta_path:
                sys.meta_path.remove(cls)
            _blas_bindings_alone()
        return None


def start(snakemake, torch: bool = True):
    """Route logging to ``log[0]``, import the package from ``src/``, fix threads to the rule's ``threads:``.

    ``torch=False``: the job does not use PyTorch, which is then not imported.
    """
    # scriptdir is workflow/rules/../scripts: resolve before going up, or the package would be
    # imported from wherever the environment installed it instead of this clone's src/.
    root = Path(snakemake.scriptdir).resolve().parents[1]
    sys.path.insert(0, str(root / "src"))
    # a local build's job server runs this script in a fork of a process that has the imports
    # and the kernels loaded already (bnstudy.pipeline.jobserver); this process then only waits
    from bnstudy.pipeline import jobserver

    status = jobserver.hand_off(sys.argv[0], snakemake.log[0] if snakemake.log else None)
    if status is not None:
        sys.exit(status)
    Path(snakemake.log[0]).parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=snakemake.log[0],
        filemode="w",
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
    )
    if _BlasBeforeNumbasNumPy not in sys.meta_path:
        sys.meta_path.insert(0, _BlasBeforeNumbasNumPy)
    from bnstudy.base import runtime

    runtime.configure(snakemake.threads, torch=torch)
    log = logging.getLogger(snakemake.rule)
    log.info("rule %s wildcards %s", snakemake.rule, dict(snakemake.wildcards))
    return log
