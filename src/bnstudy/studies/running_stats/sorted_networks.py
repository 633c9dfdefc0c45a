"""The trained networks of the running-statistics study: class-sorted against shuffled training batches.

Per batch size and order, each of :data:`TRAINED_METRICS` (accuracy in both modes, the share of
test labels the modes disagree on, the logits' RMSE between them) over seeds: the mean,
sd and interval over seeds (:func:`trained_summary`), the macros the text quotes
(:func:`trained_macros`) and the LaTeX table (:func:`sorted_table`).
:mod:`bnstudy.studies.running_stats.report` puts them in the summary.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.base import stats
from bnstudy.paper import latex

TRAINED_METRICS = ["inference_accuracy", "train_mode_accuracy", "label_disagreement", "train_eval_rmse"]


def trained_summary(trained: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """The class-sorted and shuffled trained networks: mean, sd and interval over seeds per metric."""
    long = trained.melt(
        id_vars=["normaliser", "batch_size", "order", "seed"], value_vars=TRAINED_METRICS, var_name="metric"
    )
    return stats.summarise_over_seeds(long, ["normaliser", "batch_size", "order", "metric"], "value", confidence)


def trained_macros(cells: dict, seeds: int) -> dict:
    """Macros of the trained networks: every cell's mean, and the smallest batch size's by name."""
    m = latex.macro_name

    def value(metric, mean):  # a share of the test rows with its unit ("32.9\\%"), an accuracy as a fraction
        if metric == "label_disagreement":
            return latex.fmt(None if mean is None else float(mean), 1, percent=True)
        return latex.fmt(None if mean is None else float(mean), 3)

    macros = {}
    for (b, order, metric), r in cells.items():
        macros[m("rs trained", order, metric, "b", b)] = value(metric, r.mean)
    trained_sizes = sorted({k[0] for k in cells})
    macros["rsTrainedSeeds"] = str(seeds)
    b0 = trained_sizes[0]
    macros["rsTrainedBatch"] = str(b0)
    for order in ("shuffled", "sorted"):
        for metric in TRAINED_METRICS:
            r = cells.get((b0, order, metric))
            macros[m("rs trained", order, metric)] = value(metric, None if r is None else r.mean)
    noun = "batch size" if len(trained_sizes) == 1 else "batch sizes"
    macros["rsTrainedBatchSizes"] = f"{noun} {latex.words([str(b) for b in trained_sizes])}"
    return macros


def sorted_table(cells: dict) -> tuple:
    """Study 3 in trained networks: mean +- sd over seeds per batch size, order and metric."""

    def ms(b, order, metric, digits=3):
        r = cells.get((b, order, metric))
        if r is None:
            return "--"
        sd = "" if pd.isna(r.sd) else f" $\\pm$ {r.sd:.{digits}f}"
        return f"{r.mean:.{digits}f}{sd}"

    trained_sizes = sorted({k[0] for k in cells})
    rows = [
        [str(b), order] + [ms(b, order, k) for k in TRAINED_METRICS]
        for b in trained_sizes
        for order in ("shuffled", "sorted")
    ]
    return (
        ["$b$", "batches", "inference acc.", "training-mode acc.", "label disagreement", "logit RMSE"],
        rows,
        "rlllll",
        "Study 3 in trained networks: class-sorted versus shuffled training batches",
    )
