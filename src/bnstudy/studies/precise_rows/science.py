"""PreciseBN on a budget: batch norm's population statistics recomputed from a few training rows.

The remedies (:mod:`bnstudy.studies.batch_size.remedies`; the shared recomputation
:mod:`bnstudy.evaluation.recompute`) recompute the statistics from a whole
pass over the training rows. Here each trained batch-norm network of the grid gets them from the
first ``rows // b`` batches of a seeded pass (``b`` its training batch size, so the rows pool in
the batches it was trained in; a budget smaller than one batch is left out at that batch size),
for each budget ``rows`` and each of ``replicates`` passes, and
is scored in inference mode on the test rows beside its trained running averages (``ema``), the
whole pass (``all``: the remedies' PreciseBN, the same arithmetic on the same batches) and the
exact statistics. Replicate ``r`` draws its pass from seed ``seed + r``; replicate 0's pass is the
remedies' pass, so its first batches are those PreciseBN pools first.
"""

from __future__ import annotations

import numpy as np

from bnstudy.evaluation import means, recompute
from bnstudy.evaluation.accuracy import inference_correct, share
from bnstudy.evaluation.distance import distances

ALL = "all"  # the budget of the whole pass: PreciseBN as the remedies compute it


def budget_batches(y_train, batch_size: int, rows: int | str, pass_seed: int, last_batch: str) -> list:
    """The batches a budget pools: the first ``rows // batch_size`` of the seeded pass
    (:func:`bnstudy.evaluation.recompute.pass_batches`), or all of them for :data:`ALL`."""
    batches = recompute.pass_batches(y_train, batch_size, pass_seed, last_batch)
    if rows == ALL:
        return batches
    count = int(rows) // batch_size
    if count < 1 or count > len(batches):
        raise ValueError(f"a budget of {rows} rows is not 1 to {len(batches)} batches of {batch_size}")
    return batches[:count]


def _layer_means(distance_rows: list[dict], models: int) -> tuple[np.ndarray, np.ndarray]:
    """Per model, the mean over layers (in layer order) of the two distances to the exact statistics."""
    mean = [[r["mean_distance"] for r in distance_rows if r["model"] == i] for i in range(models)]
    var = [[r["var_distance"] for r in distance_rows if r["model"] == i] for i in range(models)]
    return (
        np.array([means.mean_in_order(v) for v in mean]),
        np.array([means.mean_in_order(v) for v in var]),
    )


def _scored(stacked, spec, stats, exact, data) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per model: test accuracy in inference mode with ``stats``, and the distances to ``exact``."""
    hits = inference_correct(recompute.with_statistics(stacked, stats), spec, data["x_test"], data["y_test"])
    models = hits.shape[0]
    mean, var = _layer_means(distances(stats, exact, spec.eps, spec), models)
    return share(hits), mean, var


def arms(budgets, replicates: int, seed: int, batch_size: int) -> list[tuple[str, int | str, int, int]]:
    """Every (arm, rows, replicate, pass seed) evaluated, in output order: the trained running
    averages, the exact statistics, then each budget of at least one batch of ``batch_size``
    (smallest first) per replicate, then the whole pass (seed ``seed``)."""
    out = [("ema", 0, 0, seed), ("exact", 0, 0, seed)]
    out += [("rows", int(k), r, seed + r) for k in sorted(budgets) if k >= batch_size for r in range(replicates)]
    return out + [("rows", ALL, 0, seed)]


def evaluate(stacked, spec, seeds: list[int], data: dict, batch_size: int, settings: dict) -> list[dict]:
    """One row per model and arm (:func:`arms`): ``seed``, ``arm``, ``rows`` (the budget: an int, or
    ``all``), ``rows_used``, ``replicate``, ``accuracy``, ``mean_distance``, ``var_distance`` (means
    over the layers of :func:`bnstudy.evaluation.distance.distances` to the exact statistics of the training rows).
    ``settings``: ``budgets``, ``replicates``, ``seed``, ``last_batch``."""
    exact = recompute.exact_statistics(stacked, spec, data["x_train"])
    out = []
    for arm, rows, replicate, pass_seed in arms(
        settings["budgets"], settings["replicates"], settings["seed"], batch_size
    ):
        if arm == "ema":
            stats, used = recompute.running_statistics(stacked, spec), 0
        elif arm == "exact":
            stats, used = exact, len(data["x_train"])
        else:
            batches = budget_batches(data["y_train"], batch_size, rows, pass_seed, settings["last_batch"])
            stats = recompute.precise_statistics(stacked, spec, data["x_train"], batches)
            used = int(sum(len(b) for b in batches))
        accuracy, mean, var = _scored(stacked, spec, stats, exact, data)
        for i, s in enumerate(seeds):
            out.append(
                {"seed": s, "arm": arm, "rows": str(rows), "rows_used": used, "replicate": replicate,
                 "accuracy": float(accuracy[i]), "mean_distance": float(mean[i]), "var_distance": float(var[i])}
            )  # fmt: skip
    return out
