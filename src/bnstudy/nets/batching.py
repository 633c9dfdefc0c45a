"""Which rows go into which batch: the seeded order of every training epoch.

Every epoch the training rows are permuted by NumPy's PCG64 generator (an integer
algorithm: the same permutation on every machine) seeded from ``(seed,
STREAM_ORDER)``, and cut into batches of ``batch_size``. What is left over
(``n mod batch_size`` rows) is dropped with ``last_batch="drop"`` (the default):
with 898 rows that is 2 rows at every batch size but 2. ``last_batch="keep"``
keeps a final batch of two or more rows; a final batch of one row cannot be
normalised with batch statistics and is always dropped. ``order="class_sorted"``
sorts the permuted rows by label (stable) before cutting, so each batch holds
one or two classes, and shuffles the order of the full batches: the
non-exchangeable control.
"""

from __future__ import annotations

import numpy as np

from bnstudy.base.runtime import STREAM_ORDER, derive_seed
from bnstudy.nets.recipe import batch_sizes_per_epoch

ORDERS = ("shuffle", "class_sorted")


def order_generator(seed: int) -> np.random.Generator:
    """The generator of a training run's batch order."""
    return np.random.default_rng(derive_seed(seed, STREAM_ORDER))


def epoch_batches(
    rng: np.random.Generator, labels: np.ndarray, batch_size: int, order: str = "shuffle", last_batch: str = "drop"
) -> list[np.ndarray]:
    """Row indices of each batch of one epoch, drawn from ``rng``."""
    labels = np.asarray(labels)
    n = len(labels)
    perm = rng.permutation(n)
    if order == "class_sorted":
        perm = perm[np.argsort(labels[perm], kind="stable")]
    elif order != "shuffle":
        raise ValueError(f"unknown order {order!r}; expected one of {ORDERS}")
    sizes = batch_sizes_per_epoch(n, batch_size, last_batch)
    batches = np.split(perm[: sum(sizes)], np.cumsum(sizes)[:-1])
    if order == "class_sorted":  # shuffle the full batches; a short last batch stays last
        full = n // batch_size
        batches = [batches[i] for i in rng.permutation(full)] + batches[full:]
    return batches


def epoch_rows(
    rng: np.random.Generator, labels: np.ndarray, batch_size: int, order: str = "shuffle", last_batch: str = "drop"
) -> np.ndarray:
    """One epoch's batches concatenated in batch order (the cut is ``batch_sizes_per_epoch``)."""
    return np.concatenate(epoch_batches(rng, labels, batch_size, order, last_batch))
