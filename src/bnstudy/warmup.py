"""Compile every kernel once, before the jobs that use them.

Numba compiles a kernel on its first call and keeps the machine code in its
on-disk cache (see :mod:`bnstudy`), so only the first process pays. Jobs started
together would each compile the same kernels (about 15 s apiece); the pipeline's
first rule instead calls every compiled entry point here, on tiny inputs through
the same code paths as the study (so with the argument types the jobs use), and
every job that runs a kernel waits for it. :func:`compile_all` returns the
compiled signatures, one line per kernel.
"""

from __future__ import annotations

import numpy as np


def _dispatchers():
    import numba

    from . import (
        backprop,
        data,
        evaluation,
        fixedmath,
        gradients,
        kernels,
        layer,
        optimisers,
        probes,
        reductions,
        remedies,
        serving,
        stats,
        tiled,
    )

    modules = (fixedmath, kernels, gradients, optimisers, backprop, tiled, probes, evaluation, remedies, layer, serving)
    for module in (*modules, reductions, data, stats):
        for name in sorted(vars(module)):
            obj = getattr(module, name)
            if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.__module__ == module.__name__:
                yield f"{module.__name__}.{name}", obj


def compile_all() -> list[str]:
    """Run every study computation on tiny inputs; return ``"kernel: signatures"`` lines."""
    from . import (
        companions,
        data,
        evaluation,
        kernels,
        model,
        normalisers,
        remedies,
        running_stats,
        selfchecks,
        serving,
        stats,
        train,
    )
    from .recipe import Recipe

    rng = np.random.default_rng(0)
    x = (rng.random((40, 64)) * 2 - 1).astype(np.float32)
    y = np.arange(40, dtype=np.int64) % 10
    data.standardisation(rng.random((6, 3)))
    population = data.synthetic_population(0, rows=32, features=5)
    running_stats.study(population, [8], [0.9], "shuffled", 0)
    selfchecks.table(population, [8], 0.9, 0)
    stats.bootstrap_examples(np.array([0.0, 1.0]), 4, 0.95, rng)
    for kind in normalisers.NAMES:
        spec = model.NetSpec(kind)
        stacked, _ = train.train_models(spec, Recipe(batch_size=4, epochs=1), [0], x, y)
        kernels.predict(stacked, spec, x)
        evaluation.train_mode_accuracy(stacked, spec, x, y, 4, 0)
        evaluation.trained_divergence(stacked, spec, x, y, 4, 0)
        companions.probe_network(
            stacked, spec, x, y, [0], batch_sizes=[2, 4], batches_per_example=2, one_class_batch_size=2, seed=0
        )
        if kind == "batchnorm":
            remedies.all_statistics(stacked, spec, x, y, 4, 0)
            evaluation.remedy_rows(stacked, spec, [0], x, y, x, y, 4, 0)
            serving.serve_stack(stacked, spec, x, serving.stream_batches(serving.stream_rows(y, "sorted", 0), 40, 4))
    return [f"{name}: {len(d.signatures)} signature(s)" for name, d in _dispatchers()]


def main() -> None:
    import time

    start = time.monotonic()
    lines = compile_all()
    print(f"bnstudy: {len(lines)} kernels ready in {time.monotonic() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
