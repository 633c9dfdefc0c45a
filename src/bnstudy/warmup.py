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
        blocks,
        conv,
        conv_train,
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

    modules = (fixedmath, blocks, kernels, gradients, optimisers, backprop, tiled, probes, serving, conv, conv_train)
    for module in (*modules, evaluation, remedies, layer, reductions, data, stats):
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
    """Training, and the remedies (which need a network whose running statistics were updated)."""
    from . import evaluation, finetune, kernels, model, normalisers, remedies, serving, train
    from .recipe import Recipe

    x, y = _inputs()
    for kind in normalisers.NAMES:
        spec = model.NetSpec(kind)
        stacked, _ = train.train_models(spec, Recipe(batch_size=4, epochs=1), [0], x, y)
        kernels.predict(stacked, spec, x)
        if kind == "batchnorm":
            remedies.all_statistics(stacked, spec, x, y, 4, 0)
            evaluation.remedy_rows(stacked, spec, [0], x, y, x, y, 4, 0)
            serving.serve_stack(stacked, spec, x, serving.stream_batches(serving.stream_rows(y, "sorted", 0), 40, 4))
            finetune.run(model.unstack(stacked)[0], spec, x, y, np.arange(8), 2, 1e-3, True)  # train_run(frozen=...)


def _evaluation() -> None:
    from . import evaluation, model, normalisers

    x, y = _inputs()
    for kind in normalisers.NAMES:
        spec = model.NetSpec(kind)
        stacked = model.initial_stack(spec, [0])
        evaluation.train_mode_accuracy(stacked, spec, x, y, 4, 0)
        evaluation.trained_divergence(stacked, spec, x, y, 4, 0)


def _probes() -> None:
    from . import companions, model, normalisers

    x, y = _inputs()
    for kind in normalisers.NAMES:
        spec = model.NetSpec(kind)
        stacked = model.initial_stack(spec, [0])
        companions.probe_network(
            stacked, spec, x, y, [0], batch_sizes=[2, 4], batches_per_example=2, one_class_batch_size=2, seed=0
        )


def _conv() -> None:
    """The convolutional network: training, both modes of its forward pass, the pair probes."""
    from . import conv_study, conv_train
    from .recipe import Recipe

    x, y = _inputs()
    for kind in ("none", "batchnorm", "groupnorm", "layernorm"):
        spec = conv_train.ConvSpec(kind, (4, 8), 2)
        weights, _, _ = conv_study.train_normaliser(spec, Recipe(batch_size=4, epochs=1), [4], [0], x, y, x, y, 0)
        if kind == "batchnorm":
            pairs = conv_study.companion_pairs([0], y, 1, np.array([0]), 0)
            conv_study.probe(weights, spec, [4], [0], x, y, pairs)


def _population() -> None:
    from . import data, running_stats, selfchecks, stats

    rng = np.random.default_rng(0)
    data.standardisation(rng.random((6, 3)))
    population = data.synthetic_population(0, rows=32, features=5)
    running_stats.study(population, [8], [0.9], "shuffled", 0)
    selfchecks.table(population, [8], 0.9, 0)
    stats.bootstrap_examples(np.array([0.0, 1.0]), 4, 0.95, rng)


# Independent parts, longest first: ``--jobs N`` compiles them in N processes at once.
PARTS = (_training, _conv, _probes, _evaluation, _population)


def compile_all(part: int = 0, parts: int = 1) -> list[str]:
    """Run every study computation on tiny inputs (parts ``part``, ``part + parts``, ... of
    :data:`PARTS`); return ``"kernel: signatures"`` lines of the kernels compiled here."""
    for task in PARTS[part::parts]:
        task()
    return [f"{name}: {len(d.signatures)} signature(s)" for name, d in _dispatchers() if d.signatures]


def main(argv=None) -> None:
    import argparse
    import os
    import subprocess
    import sys
    import time

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="processes compiling at once (capped at the CPUs)")
    parser.add_argument("--part", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--parts", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    start = time.monotonic()
    jobs = max(1, min(args.jobs, len(PARTS), os.cpu_count() or 1))
    if jobs > 1 and args.parts == 1:
        # each part in its own process; Numba's cache writes are atomic renames, so the
        # kernels two parts share are written whole by whichever finishes first
        procs = [
            subprocess.Popen([sys.executable, "-m", "bnstudy.warmup", "--part", str(i), "--parts", str(jobs)])
            for i in range(jobs)
        ]
        if any(p.wait() for p in procs):
            raise SystemExit("bnstudy: compiling the kernels failed")
        print(f"bnstudy: kernels ready in {time.monotonic() - start:.1f} s ({jobs} processes)", flush=True)
        return
    lines = compile_all(args.part, args.parts)
    if args.parts == 1:
        print(f"bnstudy: {len(lines)} kernels ready in {time.monotonic() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
