"""Compile every kernel once, before the jobs that use them.

Numba compiles a kernel on its first call and keeps the machine code in its
on-disk cache (see :mod:`bnstudy`), so only the first process pays. Jobs started
together would each compile the same kernels (about 15 s apiece); the pipeline's
first rule instead calls every compiled entry point here, on tiny inputs through
the same code paths as the study (so with the argument types the jobs use), and
every job that runs a kernel waits for it. :func:`compile_all` returns the
compiled signatures, one line per kernel. Two warm-ups of one machine's kernels never compile
side by side: the second waits for the first, then loads (:func:`bnstudy.pipeline.kernelcache.one_warm_up`).

A damaged cache heals here: Numba unpickles its cache files without a guard, so
a truncated or corrupt one would fail every job that loads it. :func:`heal_cache`
first reads every index and data file of the cache (data files by pickle
opcode, nothing built); a kernel with an unreadable file loses its whole
entry (index and data files), said in one line, and is compiled afresh. A load
that still fails while compiling (damage the structural read cannot see) removes
the whole cache, says so, and compiles everything afresh.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import pickle
import pickletools
import pkgutil
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def _dispatchers():
    import numba

    from bnstudy import compiled
    from bnstudy.base import fixedmath, stats
    from bnstudy.evaluation import accuracy, distance, means, recompute
    from bnstudy.nets import conv_train, data
    from bnstudy.studies.batch_size import remedies

    # every module of the compiled layer (a kernel module added or split off is listed as it lands)
    kernel_modules = [
        importlib.import_module(f"{compiled.__name__}.{m.name}") for m in pkgutil.iter_modules(compiled.__path__)
    ]
    modules = (fixedmath, *kernel_modules, conv_train, accuracy, recompute, distance, means)
    for module in (*modules, remedies, data, stats):
        for name in sorted(vars(module)):
            obj = getattr(module, name)
            if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.__module__ == module.__name__:
                yield f"{module.__name__}.{name}", obj


def _inputs():
    rng = np.random.default_rng(0)
    x = (rng.random((40, 64)) * 2 - 1).astype(np.float32)
    y = np.arange(40, dtype=np.int64) % 10
    return x, y


def _training() -> None:
    """The training loop of every kind (one compile of ``backprop.train_run`` for the MLP: the
    longest), and fine-tuning's run of it with frozen statistics."""
    from bnstudy.base import normalisers
    from bnstudy.nets import model, train
    from bnstudy.nets.recipe import Recipe
    from bnstudy.studies.finetune import science as finetune

    x, y = _inputs()
    for kind in normalisers.NAMES:
        spec = model.NetSpec(kind)
        stacked, _ = train.train_models(spec, Recipe(batch_size=4, epochs=1), [0], x, y)
        if kind == "batchnorm":
            finetune.run(model.unstack(stacked)[0], spec, x, y, np.arange(8), 2, 1e-3, True)  # train_run(frozen=...)


def _network_kernels() -> None:
    """What runs a trained MLP but does not train it: inference, the remedies' statistics and
    scores, serving (compiled on initial weights: the kernels depend on the types, not the values)."""
    from bnstudy.base import normalisers
    from bnstudy.compiled import kernels
    from bnstudy.nets import model
    from bnstudy.studies.batch_size import evaluation, remedies
    from bnstudy.studies.serving import science as serving

    x, y = _inputs()
    for kind in normalisers.NAMES:
        spec = model.NetSpec(kind)
        stacked = model.initial_stack(spec, [0])
        kernels.predict(stacked, spec, x)
        if kind == "batchnorm":
            for key in stacked:  # as after training: the running statistics updated (the debiasing needs it)
                if key.endswith("num_batches_tracked"):
                    stacked[key] = stacked[key] + 10
            remedies.all_statistics(stacked, spec, x, y, 4, 0)
            evaluation.remedy_rows(stacked, spec, [0], x, y, x, y, 4, 0)
            serving.serve_stack(stacked, spec, x, serving.stream_batches(serving.stream_rows(y, "sorted", 0), 40, 4))


def _evaluation() -> None:
    from bnstudy.base import normalisers
    from bnstudy.evaluation import accuracy, means
    from bnstudy.nets import model

    x, y = _inputs()
    for kind in normalisers.NAMES:
        spec = model.NetSpec(kind)
        stacked = model.initial_stack(spec, [0])
        accuracy.train_mode_accuracy(stacked, spec, x, y, 4, 0)
        accuracy.trained_divergence(stacked, spec, x, y, 4, 0)
    means.mean_in_order([0.5, 0.25])  # the summaries' seed means


def _probes() -> None:
    from bnstudy.base import normalisers
    from bnstudy.nets import model
    from bnstudy.studies.companions import science as companions

    x, y = _inputs()
    for kind in normalisers.NAMES:
        spec = model.NetSpec(kind)
        stacked = model.initial_stack(spec, [0])
        companions.probe_network(
            stacked, spec, x, y, [0], batch_sizes=[2, 4], batches_per_example=2, one_class_batch_size=2, seed=0
        )


# The convolutional kernels are compiled for a number of layers (a network's layers reach them as a
# tuple, whose length is part of the type): the warm-up compiles those of the config's layers when the
# workflow names them here (its ``onstart``, ``--layers``), else two layers (the tests' networks).
LAYERS_VARIABLE = "BNSTUDY_CONV_LAYERS"  # the config's network.layers as JSON
DEFAULT_LAYERS = ({"channels": 4, "stride": 1}, {"channels": 8, "stride": 2})


def conv_layout(layers=None) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """``(channels, strides, skips)`` of the small network whose kernels stand for ``layers``' (a config's
    ``network.layers``; default: :data:`LAYERS_VARIABLE`'s, else :data:`DEFAULT_LAYERS`): the same
    number of layers, strides and residual connections, 4 channels a layer (kernels are typed by the
    number of layers, not their widths; a residual connection needs equal widths)."""
    import json

    from bnstudy.base import convlayers

    if layers is None:
        text = os.environ.get(LAYERS_VARIABLE)
        layers = json.loads(text) if text else DEFAULT_LAYERS
    if layers is DEFAULT_LAYERS:
        return (4, 8), (1, 2), (-1, -1)
    blocks = convlayers.parse({"layers": layers})
    return (4,) * len(blocks), tuple(b.stride for b in blocks), tuple(b.skip for b in blocks)


def _conv() -> None:
    """The convolutional network of ``network.kind: conv`` (with the config's number of layers,
    :func:`conv_layout`): training, both modes of its forward pass, the shared probes."""
    from bnstudy.base import normalisers
    from bnstudy.nets import conv_train
    from bnstudy.nets.recipe import Recipe
    from bnstudy.studies.companions import science as companions

    x, y = _inputs()
    channels, strides, skips = conv_layout()
    for kind in normalisers.CONV_NAMES:
        spec = conv_train.ConvSpec(kind, channels, 2, strides=strides, skips=skips)
        stacked, _ = spec.train_models(Recipe(batch_size=4, epochs=1), [0], x, y)
        spec.logits(stacked, x)
        spec.logits(stacked, x, train=True, batch=4)
        if kind == "batchnorm":
            companions.probe_network(
                stacked, spec, x, y, [0], batch_sizes=[2], batches_per_example=2, one_class_batch_size=2, seed=0
            )


def _population() -> None:
    from bnstudy.base import stats
    from bnstudy.nets import data
    from bnstudy.studies.running_stats import science as running_stats
    from bnstudy.studies.running_stats import selfchecks

    rng = np.random.default_rng(0)
    data.standardisation(rng.random((6, 3)))
    population = data.synthetic_population(0, rows=32, features=5)
    running_stats.study(population, [8], [0.9], "shuffled", 0)
    selfchecks.table(population, [8], 0.9, 0)
    stats.bootstrap_examples(np.array([0.0, 1.0]), 4, 0.95, rng)


# ---- the on-disk cache --------------------------------------------------------
# Numba keeps one index per kernel (``<name>-<line>.py311.nbi``: a pickled version string, then a pickled
# (source stamp, overloads)) and a data file per compiled signature (``<name>-<line>.py311.<n>.nbc``: one
# pickle); a kernel's files share the part of the name before the Python tag. UNREADABLE: what a damaged one raises.
CACHE_SUFFIXES = (".nbi", ".nbc")
UNREADABLE = (pickle.UnpicklingError, EOFError, ValueError, IndexError, KeyError, TypeError, AttributeError)


def cache_dir() -> Path:
    """The Numba cache directory this process uses (``NUMBA_CACHE_DIR``, set by importing ``bnstudy``)."""
    import numba

    return Path(numba.config.CACHE_DIR or os.environ["NUMBA_CACHE_DIR"])


def _pickles(data: bytes) -> int:
    """The number of whole pickles ``data`` holds, back to back; raises if any is cut short or garbled."""
    count, pos = 0, 0
    while pos < len(data):
        end = None
        for opcode, _, end_pos in pickletools.genops(data[pos:]):
            end = end_pos
        if end is None or opcode.name != "STOP":
            raise pickle.UnpicklingError("pickle data was truncated")
        pos += end + 1
        count += 1
    return count


def unreadable(path: Path) -> str | None:
    """Why a cache file cannot be loaded (one line), or ``None`` if it reads whole.

    A data file is read by opcode (nothing is built); an index, small, is loaded as Numba loads it.
    """
    try:
        data = path.read_bytes()
        whole = _pickles(data)
        if path.suffix == ".nbi":
            if whole != 2:
                raise pickle.UnpicklingError(f"{whole} pickle(s) where an index has 2")
            stream = io.BytesIO(data)
            pickle.load(stream)  # Numba's version
            pickle.load(stream)  # the source stamp and the overloads
        elif whole != 1:
            raise pickle.UnpicklingError(f"{whole} pickles where a data file has 1")
    except FileNotFoundError:
        return None  # removed meanwhile (another run's heal)
    except (OSError, *UNREADABLE) as err:
        return f"{type(err).__name__}: {' '.join(str(err).split())}"
    return None


def _kernel(name: str) -> str:
    """The kernel a cache file's name is of: ``<qualified name>-<line>`` before ``.py<version>.``."""
    found = re.match(r"(.+-\d+)\.py\d+\.", name)
    return found.group(1) if found else name


def _entry(path: Path) -> list[Path]:
    """Every file of the kernel whose cache file ``path`` is: its index and its data files."""
    kernel = _kernel(path.name)
    return [p for p in path.parent.iterdir() if p.suffix in CACHE_SUFFIXES and _kernel(p.name) == kernel]


def heal_cache(root: Path | None = None) -> list[str]:
    """Remove the entries of kernels with an unreadable cache file under ``root`` (default: this
    process's cache directory); return one line saying what was removed (empty: nothing)."""
    root = cache_dir() if root is None else Path(root)
    if not root.is_dir():
        return []
    bad = {}
    for path in sorted(root.rglob("*")):
        if path.suffix in CACHE_SUFFIXES and path.is_file():
            why = unreadable(path)
            if why is not None:
                bad[path] = why
    if not bad:
        return []
    removed = set()
    for path in bad:
        removed.update(_entry(path))
    for path in removed:
        path.unlink(missing_ok=True)
    first, why = next(iter(bad.items()))
    kernels = {(p.parent, _kernel(p.name)) for p in removed}
    return [
        f"bnstudy: damaged kernel cache in {root}: {len(bad)} unreadable file(s) (first {first.name}: {why}); "
        f"removed the entries of {len(kernels)} kernel(s), compiling them afresh"
    ]


def remove_cache(root: Path | None = None) -> int:
    """Remove every Numba cache file and warm-up mark under ``root`` (default: this process's cache directory)."""
    root = cache_dir() if root is None else Path(root)
    files = [p for p in root.rglob("*") if p.suffix in CACHE_SUFFIXES or ".warmed-" in p.name] if root.is_dir() else []
    for path in files:
        path.unlink(missing_ok=True)
    return len(files)


def _from_cache(err: BaseException) -> bool:
    """Whether ``err`` was raised while Numba loaded a cache file."""
    tb = err.__traceback__
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).as_posix().endswith("numba/core/caching.py"):
            return True
        tb = tb.tb_next
    return False


def compile_healing(part: int = 0, parts: int = 1, network: str = "conv") -> list[str]:
    """:func:`compile_all`; a failure while Numba loads its cache removes the whole cache (one line
    says so) and compiles again. Any other error is raised as it is."""
    try:
        return compile_all(part, parts, network)
    except Exception as err:
        if not _from_cache(err):
            raise
        n = remove_cache()
        print(
            f"bnstudy: damaged kernel cache in {cache_dir()} ({type(err).__name__}: {' '.join(str(err).split())}); "
            f"removed it ({n} files), compiling afresh",
            flush=True,
        )
        return compile_all(part, parts, network)


# Independent parts: ``--jobs N`` compiles them in N processes at once (:func:`part_tasks`). A config
# whose network is the MLP (``network.kind`` absent or ``mlp``) needs no convolutional kernel:
# ``--network mlp`` leaves that part out (its kernels compile on first use, if a later build asks).
PARTS = (_training, _conv, _network_kernels, _evaluation, _probes, _population)
NETWORKS = ("conv", "mlp")


def network_parts(network: str) -> tuple:
    """The parts of :data:`PARTS` that a config whose network is ``network`` needs."""
    return PARTS if network == "conv" else tuple(p for p in PARTS if p is not _conv)


def part_tasks(network: str, part: int, parts: int) -> tuple:
    """Process ``part``'s share of ``parts``: every ``parts``-th of :func:`network_parts` from the ``part``-th,
    but the MLP's training loop alone in the first (its one compile, 34 CPU s, is as long as the four other
    parts', which share kernels: both ready in 36 s, not 42, on the 2-core Xeon; conv: within 2 s of the best)."""
    tasks = network_parts(network)
    if network == "mlp" and parts > 1:
        return tasks[:1] if part == 0 else tasks[1:][part - 1 :: parts - 1]
    return tasks[part::parts]


def compile_all(part: int = 0, parts: int = 1, network: str = "conv") -> list[str]:
    """Run every study computation of ``network``'s configs on tiny inputs (process ``part``'s share
    of ``parts``, :func:`part_tasks`); return ``"kernel: signatures"`` lines of the kernels compiled here."""
    for task in part_tasks(network, part, parts):
        task()
    return [f"{name}: {len(d.signatures)} signature(s)" for name, d in _dispatchers() if d.signatures]


def compile_mlp() -> list[str]:
    """:func:`compile_all` for a config whose network is the MLP (the job server's preload)."""
    return compile_all(network="mlp")


def main(argv=None) -> None:
    from bnstudy.pipeline import kernelcache

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="processes compiling at once (capped at the CPUs)")
    parser.add_argument(
        "--network", choices=NETWORKS, default="conv", help="the config's network.kind (default: both networks')"
    )
    parser.add_argument(
        "--layers", help=f"the config's network.layers as JSON, for the convolutions (sets {LAYERS_VARIABLE})"
    )
    parser.add_argument("--part", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--parts", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--healed", action="store_true", help=argparse.SUPPRESS)  # the cache was checked already
    args = parser.parse_args(argv)
    if args.layers:  # read by _conv, here and in the processes started below
        os.environ[LAYERS_VARIABLE] = args.layers
    start = time.monotonic()
    if args.healed:  # a part of a warm-up that holds the lock and checked the cache
        compile_healing(args.part, args.parts, args.network)
        return
    with kernelcache.one_warm_up(lambda line: print(line, flush=True)):
        if healed := heal_cache():  # once, before any part compiles
            print(*healed, sep="\n", flush=True)
            kernelcache.forget_warm_ups()
        done = ["mlp"] if args.network == "mlp" else [repr(conv_layout()), "mlp"]  # a conv warm-up does the MLP's too
        jobs = max(1, min(args.jobs, len(network_parts(args.network)), os.cpu_count() or 1))
        if jobs > 1 and args.parts == 1 and not kernelcache.warmed(done[0]):  # else: loaded by one process
            # each part in its own process; Numba's cache writes are atomic renames, so the
            # kernels two parts share are written whole by whichever finishes first
            command = [sys.executable, "-m", "bnstudy.tools.warmup", "--network", args.network, "--healed"]
            procs = [subprocess.Popen(command + ["--part", str(i), "--parts", str(jobs)]) for i in range(jobs)]
            if any(p.wait() for p in procs):
                raise SystemExit("bnstudy: compiling the kernels failed")
            kernelcache.mark_warmed(*done)
            print(f"bnstudy: kernels ready in {time.monotonic() - start:.1f} s ({jobs} processes)", flush=True)
            return
        lines = compile_healing(args.part, args.parts, args.network)
        if args.parts == 1:
            kernelcache.mark_warmed(*done)
            print(f"bnstudy: {len(lines)} kernels ready in {time.monotonic() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
