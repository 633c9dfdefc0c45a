"""Probe batches in which every row is a probe.

The study probes one example per batch (row 0; :mod:`bnstudy.studies.companions.science`). The audit
uses every row: a batch of ``b`` rows gives ``b`` training-mode predictions, each of
its row's example with the other ``b - 1`` rows as companions. So its cost is the
number of probes, not examples x batches x ``b``.

:func:`rounds`: ``K`` rounds over a pool of examples; each round is a uniform
permutation of the pool cut into batches of ``b``. If ``b`` does not divide the
pool, the last ``r`` rows form a batch completed by ``b - r`` other rows of the pool
drawn uniformly without replacement; those filling rows are not counted as probes
(their examples already have their probe of that round). Every example thus gets
exactly ``K`` probes, and its companions in each are a uniform draw from the rest of
the pool, as in the study's random design. Within a one-group pool (one label, one
source...) the same gives the study's own-class design.

:func:`exact_pairs`: the study's exact design at ``b = 2`` for a sample of examples,
each paired once with every other row of the pool; a pair of two sampled examples
is one batch that probes both.

Generators are PCG64, seeded from ``(seed, STREAM_PROBE, design, b)``
(:func:`bnstudy.base.runtime.derive_seed`), the groups of a one-group design drawn in
sorted order from one generator.
"""

from __future__ import annotations

import numpy as np

from bnstudy.base.runtime import STREAM_PROBE, derive_seed

DESIGN_CODES = {"random": 0, "exact": 1, "label": 2, "group": 3, "sample": 4}


def generator(seed: int, design: str, b: int = 0) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(derive_seed(seed, STREAM_PROBE, DESIGN_CODES[design], int(b))))


def rounds(pool: np.ndarray, b: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(batches, counted)``, both ``(G, b)``: row indices and whether each row is a probe."""
    pool = np.asarray(pool, np.int64)
    n = len(pool)
    if n < b:
        raise ValueError(f"a pool of {n} rows has no batch of {b}")
    full, rest = divmod(n, b)
    per_round = full + (1 if rest else 0)
    batches = np.empty((k * per_round, b), np.int64)
    counted = np.ones((k * per_round, b), bool)
    for r in range(k):
        perm = pool[rng.permutation(n)]
        at = r * per_round
        batches[at : at + full] = perm[: full * b].reshape(full, b)
        if rest:
            fill = rng.choice(n - rest, size=b - rest, replace=False)
            batches[at + full, :rest] = perm[full * b :]
            batches[at + full, rest:] = perm[fill]
            counted[at + full, rest:] = False
    return batches, counted


def exact_pairs(sample: np.ndarray, pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(pairs, counted)``, both ``(P, 2)``: every sampled example with every other pool row once.

    ``sample`` must be rows of ``pool``. A pair of two sampled rows appears once, at the
    earlier sampled row, and counts for both.
    """
    sample = np.asarray(sample, np.int64)
    pool = np.asarray(pool, np.int64)
    position = np.full(int(max(pool.max(initial=0), sample.max(initial=0))) + 1, -1)
    position[sample] = np.arange(len(sample))
    parts, marks = [], []
    for i, e in enumerate(sample):
        others = pool[pool != e]
        j = position[others]
        keep = (j < 0) | (j > i)
        others = others[keep]
        parts.append(np.stack([np.full(len(others), e), others], axis=1))
        marks.append(np.stack([np.ones(len(others), bool), j[keep] > i], axis=1))
    if not parts:
        return np.empty((0, 2), np.int64), np.empty((0, 2), bool)
    return np.concatenate(parts), np.concatenate(marks)


def exact_pair_count(sample_size: int, pool_size: int) -> int:
    """Number of pairs :func:`exact_pairs` forms."""
    return sample_size * (pool_size - 1) - sample_size * (sample_size - 1) // 2


def choose_examples(y: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """The study's stratified choice (:func:`bnstudy.studies.companions.draws.choose_examples`, the same
    draws): ``per_class`` rows of every class, sorted, each class a uniform draw without replacement from
    one generator seeded from ``(seed, STREAM_PROBE)``, classes in sorted order."""
    rng = np.random.default_rng(derive_seed(seed, STREAM_PROBE))
    chosen = []
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        if len(rows) < per_class:
            raise ValueError(f"class {c} has {len(rows)} rows, fewer than {per_class}")
        chosen.append(rng.choice(rows, size=per_class, replace=False))
    return np.sort(np.concatenate(chosen))


def stratified_sample(n: int, size: int, y: np.ndarray | None, seed: int) -> np.ndarray:
    """Sorted row indices of exactly ``min(size, n)`` of ``n`` rows.

    Without labels, a uniform draw. With labels ``y``, stratified: when ``size`` is a multiple of
    the number of classes and every class holds ``size // classes`` rows, the study's choice
    (:func:`choose_examples`); otherwise each class gets ``size // classes`` rows (as many as it
    holds, if fewer), and the rows left over go one each to classes with rows to spare, drawn at
    random (so fewer examples than classes are spread over as many classes), each class's rows a
    uniform draw without replacement.
    """
    if size >= n:
        return np.arange(n)
    if y is None:
        return np.sort(generator(seed, "sample").choice(n, size=size, replace=False))
    y = np.asarray(y)
    classes, counts = np.unique(y, return_counts=True)
    per = size // len(classes)
    if size % len(classes) == 0 and per <= counts.min():
        return choose_examples(y, per, seed)
    rng = generator(seed, "sample")
    alloc = np.minimum(counts, per)
    while alloc.sum() < size:
        room = np.flatnonzero(alloc < counts)
        extra = rng.permutation(room)[: size - alloc.sum()]
        alloc[extra] += 1
    chosen = [rng.choice(np.flatnonzero(y == c), size=int(k), replace=False) for c, k in zip(classes, alloc) if k]
    return np.sort(np.concatenate(chosen))
