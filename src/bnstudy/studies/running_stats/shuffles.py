"""The running-statistics study's replicate shuffles: each estimator's error over shuffles of the training order.

As a table, macros and a LaTeX table.

Per estimator and batch size, the running statistics' error and the train-eval gap over the
replicate shuffles: mean, sd and a Student-t interval formed on the log scale (both are errors,
never negative: :func:`bnstudy.base.stats.positive_interval`). :mod:`bnstudy.studies.running_stats.report`
puts them in the summary.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.base import stats
from bnstudy.paper import latex
from bnstudy.studies.running_stats import terms

SHUFFLE_METRICS = ("running_error", "train_eval_rmse")


def shuffle_summary_table(shuffles: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Mean, sd and interval over shuffles of each metric, per estimator and batch size: both
    metrics are errors (never negative), so the Student-t interval is formed on the log scale
    (:func:`bnstudy.base.stats.positive_interval`) and never reaches below zero."""
    long = shuffles.melt(
        id_vars=["estimator", "batch_size", "updates", "shuffle"], value_vars=list(SHUFFLE_METRICS), var_name="metric"
    )
    return stats.summarise_over_seeds(
        long, ["estimator", "batch_size", "updates", "metric"], "value", confidence, positive=True
    ).rename(columns={"seeds": "shuffles"})


def _shuffle_interval(lo, hi) -> str:
    """``[lo, hi]`` with four decimals; ``(every shuffle alike)`` for a degenerate interval."""
    if latex.degenerate(lo, hi):
        return "(every shuffle alike)"
    return f"[{latex.endpoint(float(lo), 4, scale=1.0)}, {latex.endpoint(float(hi), 4, scale=1.0)}]"


def shuffle_macros(summary: pd.DataFrame, confidence: float) -> dict:
    """Macros of the replicated shuffles: every mean with its interval, the best batch size, and
    a sentence on monotonicity that is true of the means."""

    def f4(v):
        return latex.endpoint(float(v), 4, scale=1.0)

    def with_ci(r):
        """``mean [lo, hi]``; ``exactly 0 in every shuffle`` for a degenerate interval at zero."""
        if float(r.mean) == 0 and float(r.ci_low) == 0 and float(r.ci_high) == 0:
            return "exactly 0 in every shuffle", ""
        return f4(r.mean), _shuffle_interval(r.ci_low, r.ci_high)

    m = {"rsShuffles": str(int(summary["shuffles"].max())), "rsConfidence": f"{100 * confidence:g}\\%"}
    ema = summary[(summary.estimator == "ema") & (summary.metric == "running_error")]
    means = {int(r.batch_size): float(r.mean) for r in ema.itertuples(index=False)}
    for r in summary.itertuples(index=False):
        name = latex.macro_name("rs rep", r.estimator, r.metric, "b", int(r.batch_size))
        m[name], m[name + "Ci"] = with_ci(r)
    if means:
        sizes = sorted(means)
        best = min(sizes, key=lambda b: means[b])
        m["rsRepMonotone"] = terms.monotone_sentence(means)
        m["rsRepBestBatch"] = str(best)
        for end, b in (("min", sizes[0]), ("max", sizes[-1]), ("best", best)):
            r = ema[ema.batch_size == b].iloc[0]
            m[latex.macro_name("rs rep running error", end)] = f4(r["mean"])
            m[latex.macro_name("rs rep running error", end, "ci")] = _shuffle_interval(r.ci_low, r.ci_high)
        # every estimator at the smallest and the largest batch, named without the size
        for r in summary[summary.batch_size.isin([sizes[0], sizes[-1]])].itertuples(index=False):
            end = "min" if int(r.batch_size) == sizes[0] else "max"
            name = latex.macro_name("rs rep", r.estimator, r.metric, end)
            m[name], m[name + "Ci"] = with_ci(r)
    return m


def shuffle_table(summary: pd.DataFrame) -> tuple:
    """Per batch size: the EMA's and the pooled statistics' running error, and the EMA's
    train/inference RMSE, mean over shuffles with its interval."""

    def f4(v):
        return latex.endpoint(float(v), 4, scale=1.0)

    def cell(estimator, metric, b):
        r = summary[(summary.estimator == estimator) & (summary.metric == metric) & (summary.batch_size == b)]
        if r.empty:
            return "--"
        r = r.iloc[0]
        if float(r["mean"]) == 0 and float(r.ci_low) == 0 and float(r.ci_high) == 0:
            return "exactly 0"
        return f"{f4(r['mean'])} {_shuffle_interval(r.ci_low, r.ci_high)}"

    rows = []
    for b in sorted(int(v) for v in summary.batch_size.unique()):
        u = int(summary[summary.batch_size == b].updates.iloc[0])
        rows.append(
            [
                str(b),
                str(u),
                cell("ema", "running_error", b),
                cell("bias_corrected", "running_error", b),
                cell("pooled", "running_error", b),
                cell("ema", "train_eval_rmse", b),
            ]
        )
    return (
        ["$b$", "updates", "EMA error", "bias-corr.\\ error", "pooled error", "div.\\ EMA"],
        rows,
        "rrllll",
        "Study 3 over replicate shuffles: mean [interval]",
    )
