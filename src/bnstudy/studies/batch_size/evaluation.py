"""Study 2's evaluation: a trained cell's tables (:func:`cell_tables`), the remedies scored
(:func:`remedy_rows`) and a Welch interval (:func:`gain_interval`).

How a network is scored (inference and training mode, seeded test batches, trained cells) is
every study's: :mod:`bnstudy.evaluation.accuracy`; the statistics the remedies replace,
:mod:`.remedies` and :mod:`bnstudy.evaluation.recompute`. Seed statistics (:func:`gain_interval`)
add the seeds in the order given, in float64.
"""

from __future__ import annotations

import numpy as np

from bnstudy.evaluation import recompute
from bnstudy.evaluation.accuracy import TrainedCell, correct_rows, inference_correct, share, train_mode_accuracy
from bnstudy.evaluation.distance import distances
from bnstudy.evaluation.means import _sum_and_squares
from bnstudy.nets.spec import Network
from bnstudy.studies.batch_size import remedies


def remedy_rows(
    stacked,
    spec: Network,
    seeds: list[int],
    x_train,
    y_train,
    x_test,
    y_test,
    batch_size: int,
    seed: int,
    last_batch: str = "drop",
    correct: list | None = None,
) -> tuple[list[dict], list[dict]]:
    """Inference-mode accuracy of a batch-norm stack under each replacement statistic.

    Returns ``(accuracy, distance)`` rows: one accuracy row per model and remedy
    (``mode`` = the remedy's name, see :mod:`bnstudy.studies.batch_size.remedies`), and one distance
    row per model, statistic (the trained ``ema`` and each remedy) and layer, to the
    exact statistics (d). Each remedy is evaluated on a copy: ``stacked`` is not
    modified. A list given as ``correct`` is extended with the :func:`correct_rows`
    of every remedy (each test row, right or wrong, per seed). Either network: the MLP's
    :class:`NetSpec` or the convolutional network's :class:`ConvSpec` (rows its images, layers
    numbered from 1 in :func:`bnstudy.evaluation.recompute.norm_layers` order).
    """
    statistics = remedies.all_statistics(stacked, spec, x_train, y_train, batch_size, seed, last_batch)
    accuracy, distance = [], []
    for name, stats in statistics.items():
        if name != "ema":
            hits = inference_correct(recompute.with_statistics(stacked, stats), spec, x_test, y_test)
            acc = share(hits)
            accuracy += [{"seed": s, "mode": name, "accuracy": float(acc[i])} for i, s in enumerate(seeds)]
            if correct is not None:
                correct += correct_rows(hits, seeds, name)
        for row in distances(stats, statistics["exact"], spec.eps, spec):
            distance.append({"seed": seeds[row.pop("model")], "statistics": name} | row)
    return accuracy, distance


def gain_interval(with_norm, without, confidence: float = 0.95) -> tuple[float, float, float]:
    """Difference of seed means ``mean(with_norm) - mean(without)`` and its Welch interval.

    Welch's unequal-variance Student-t interval for a difference of two means of
    *independent* samples, with Welch-Satterthwaite degrees of freedom. The study's
    own comparisons are paired by seed (same initial weights and batch order for
    every normaliser), so the pipeline uses :mod:`bnstudy.studies.batch_size.paired` instead. Means and unbiased
    variances in float64, seeds added in the order given; the t quantile from SciPy
    (:func:`bnstudy.base.stats.t_quantile`).
    """
    from bnstudy.base.stats import t_quantile

    a = np.ascontiguousarray(with_norm, dtype=np.float64)
    b = np.ascontiguousarray(without, dtype=np.float64)
    mean_a, ss_a = _sum_and_squares(a)
    mean_b, ss_b = _sum_and_squares(b)
    diff = float(mean_a - mean_b)
    if len(a) < 2 or len(b) < 2:
        return diff, float("nan"), float("nan")
    va, vb = ss_a / (len(a) - 1) / len(a), ss_b / (len(b) - 1) / len(b)
    se = float(np.sqrt(va + vb))
    if se == 0:
        return diff, diff, diff
    df = (va + vb) * (va + vb) / (va * va / (len(a) - 1) + vb * vb / (len(b) - 1))
    half = t_quantile(0.5 + confidence / 2, df) * se
    return diff, diff - half, diff + half


def cell_tables(cell: TrainedCell, batch_size: int, seed: int) -> tuple[list[dict], list[dict]]:
    """Study 2's tables of one trained cell: ``(accuracy, correct)``.

    ``accuracy``: one row per seed and mode, the inference-mode accuracy and the
    training-mode accuracy over seeded test batches of ``batch_size``
    (:func:`train_mode_accuracy`, stream ``seed``); ``correct``: each test row's
    inference-mode correctness per seed (:func:`correct_rows`).
    """
    hits = inference_correct(cell.stacked, cell.spec, cell.x, cell.y)
    seeds = [int(meta["seed"]) for meta in cell.metas]
    modes = {
        "inference": share(hits),
        "training": train_mode_accuracy(cell.stacked, cell.spec, cell.x, cell.y, batch_size, seed, cell.limits),
    }
    head = {"normaliser": cell.spec.normaliser, "batch_size": int(batch_size)}
    accuracy = [
        head | {"seed": s, "mode": mode, "accuracy": float(acc[i])}
        for mode, acc in modes.items()
        for i, s in enumerate(seeds)
    ]
    return accuracy, [head | r for r in correct_rows(hits, seeds, "inference")]
