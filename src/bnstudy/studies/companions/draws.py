"""Study 1's draws: which test examples are probed, and the companion batches of each design.

The designs (``random``, ``exact`` at ``b = 2``, ``own_class``, ``other_class``, ``any_class``) and
their estimators are described in :mod:`bnstudy.studies.companions.science`, which probes these
batches. Each design draws from its own generator, seeded from ``(seed, STREAM_PROBE, test index of
e, b, design)``, so every network sees the same batches; the draws are the same on every machine
(NumPy's PCG64, integer draws and ``Generator.random()`` uniforms only; ``K`` uniform ``m``-subsets
of a pool are the first ``m`` of a stable argsort of uniform keys, :func:`smallest_in_order`).
"""

from __future__ import annotations

import numpy as np

from bnstudy.base.runtime import STREAM_PROBE, derive_seed
from bnstudy.studies.companions.estimates import _DESIGN_CODE


def choose_examples(y: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """Test-set row indices of ``per_class`` examples of every class, sorted.

    Within each class the rows are a uniform draw without replacement from a
    generator seeded from ``(seed, STREAM_PROBE)``.
    """
    rng = np.random.default_rng(derive_seed(seed, STREAM_PROBE))
    chosen = []
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        if len(rows) < per_class:
            raise ValueError(f"class {c} has {len(rows)} test rows, fewer than {per_class}")
        chosen.append(rng.choice(rows, size=per_class, replace=False))
    return np.sort(np.concatenate(chosen))


def _generator(seed: int, example: int, b: int, design: str) -> np.random.Generator:
    key = derive_seed(seed, STREAM_PROBE, int(example), int(b), _DESIGN_CODE[design])
    return np.random.Generator(np.random.PCG64(key))


def smallest_in_order(keys: np.ndarray, m: int) -> np.ndarray:
    """Column indices of the ``m`` smallest keys of every row, in key order, ties by column.

    By definition ``np.argsort(keys, axis=1, kind="stable")[:, :m]``, which is
    unique whatever sort algorithm NumPy picks. Computed without sorting whole rows:
    the ``m``-th smallest key of a row (a value, the same whatever selection
    algorithm finds it) bounds the candidates; when exactly ``m`` keys are at most
    that value (no tie at the bound) they are the ``m`` smallest, taken in column
    order and stably sorted by key. Rows with a tie at the bound are argsorted
    whole, stably.
    """
    keys = np.asarray(keys)
    k, n = keys.shape
    if not 1 <= m <= n:
        raise ValueError(f"cannot take {m} of {n} keys")
    if m == n:
        return np.argsort(keys, axis=1, kind="stable")
    bound = np.partition(keys, m - 1, axis=1)[:, m - 1 : m]
    candidate = keys <= bound
    plain = candidate.sum(1) == m
    out = np.empty((k, m), np.int64)
    rows = np.flatnonzero(plain)
    if len(rows):
        cols = np.nonzero(candidate[rows])[1].reshape(len(rows), m)  # column order within each row
        order = np.argsort(np.take_along_axis(keys[rows], cols, axis=1), axis=1, kind="stable")
        out[rows] = np.take_along_axis(cols, order, axis=1)
    tied = np.flatnonzero(~plain)
    if len(tied):
        out[tied] = np.argsort(keys[tied], axis=1, kind="stable")[:, :m]
    return out


def _draw_from(pool: np.ndarray, k: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` rows of ``m`` distinct elements of ``pool`` each (uniform, without replacement)."""
    if m > len(pool):
        raise ValueError(f"cannot draw {m} companions from {len(pool)} rows")
    return pool[smallest_in_order(rng.random((k, len(pool))), m)]


def _others(n: int, example: int) -> np.ndarray:
    return np.concatenate([np.arange(example), np.arange(example + 1, n)])


def _with_example(example: int, companions: np.ndarray) -> np.ndarray:
    return np.concatenate([np.full((len(companions), 1), example, np.int64), companions], axis=1)


def random_batches(n: int, example: int, b: int, k: int, seed: int) -> np.ndarray:
    """``(k, b)`` row indices: column 0 is ``example``, then ``b - 1`` random other rows."""
    rng = _generator(seed, example, b, "random")
    return _with_example(example, _draw_from(_others(n, example), k, b - 1, rng))


def exact_pairs(n: int, example: int, pool: np.ndarray | None = None) -> np.ndarray:
    """``(n - 1, 2)``: ``example`` with each other test row once, in row order; with a ``pool``
    (:func:`exact_pool`), with each row of the pool but itself, in the pool's order."""
    if pool is None:
        return _with_example(example, _others(n, example)[:, None])
    pool = np.asarray(pool, np.int64)
    return _with_example(example, pool[pool != example][:, None])


def exact_pool(rows: int, size: int | None, seed: int) -> np.ndarray | None:
    """The exact design's companions (the companion study's ``exact_companions``): ``None`` (every
    test row) when ``size`` is ``None``, else ``size`` of the ``rows`` test rows drawn without
    replacement (the first ``size`` of a permutation by PCG64 seeded from ``(seed, STREAM_PROBE,
    0, 1)``, a key no example's stream ``(seed, STREAM_PROBE, example)`` shares), sorted."""
    if size is None:
        return None
    if not 1 <= int(size) <= rows:
        raise ValueError(f"a pool of {size} companions is not between 1 and the {rows} test rows")
    rng = np.random.default_rng(derive_seed(seed, STREAM_PROBE, 0, 1))
    return np.sort(rng.permutation(rows)[: int(size)]).astype(np.int64)


def one_class_batches(y: np.ndarray, example: int, b: int, k: int, seed: int, own: bool | str) -> np.ndarray:
    """``(k, b)``: ``example`` and ``b - 1`` companions all of one class.

    ``own=True`` (design ``own_class``): the example's class (never the example
    itself); ``own=False`` (``other_class``): each batch's class drawn uniformly from
    the other classes; ``own="any"`` (``any_class``): each batch's class drawn
    uniformly from all classes, the example's own included (its rows other than the
    example).
    """
    y = np.asarray(y)
    design = "any_class" if own == "any" else "own_class" if own else "other_class"
    rng = _generator(seed, example, b, design)
    label = y[example]
    rows = np.arange(len(y))
    if design == "own_class":
        companions = _draw_from(rows[(y == label) & (rows != example)], k, b - 1, rng)
    else:
        classes = [c for c in np.unique(y) if design == "any_class" or c != label]
        pick = rng.integers(len(classes), size=k)
        companions = np.empty((k, b - 1), np.int64)
        for i, c in enumerate(classes):  # one draw per class, not per batch
            where = np.flatnonzero(pick == i)
            if len(where):
                companions[where] = _draw_from(rows[(y == c) & (rows != example)], len(where), b - 1, rng)
    return _with_example(example, companions)
