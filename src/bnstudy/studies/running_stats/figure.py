"""Study 3's figure: the running statistics of one batch-norm layer after one pass.

Left: error of the moving average's running statistics against the exact
population statistics for each keep factor (shades of the moving average's
colour, lighter: forgets faster), beside what ``keep**u`` times the initial offset
predicts, and the error of one batch's own estimate. Right: the RMSE between
training-mode and inference-mode outputs with the moving average and with pooled
statistics, for shuffled (solid) and sorted (dashed) batches. Each shuffled line is the
pass of the tables; its band, where ``shuffles.csv`` is given, spans the values of every
repeated shuffle (minimum to maximum), that pass's included.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.patches import Patch

from bnstudy.paper import figures

SAME = 1e-12  # keep factors are compared to this tolerance
ORDERS = {"shuffled": ("-", "o"), "sorted": ("--", "^")}


def _keep(rows: pd.DataFrame, keep: float) -> pd.DataFrame:
    return rows[(rows["keep"] - keep).abs() < SAME].sort_values("batch_size")


BAND_ALPHA = 0.22


def _spread(ax, shuffles, estimator, metric, colour, keep=None):
    """The range over the repeated shuffles of ``metric`` of ``estimator`` (its keep factor
    ``keep`` for the moving average), per batch size, as a band."""
    if shuffles is None:
        return
    rows = shuffles[(shuffles["order"] == "shuffled") & (shuffles["estimator"] == estimator)]
    if keep is not None:
        rows = rows[(rows["keep"] - keep).abs() < SAME]
    if rows.empty:
        return
    g = rows.groupby("batch_size")[metric].agg(["min", "max"]).sort_index()
    ax.fill_between(g.index, g["min"], g["max"], color=colour, alpha=BAND_ALPHA, lw=0)


def _spread_key(shuffles, colour):
    n = shuffles["shuffle"].nunique()
    return Patch(color=colour, alpha=BAND_ALPHA, lw=0), f"range over {n} shuffles"


def _errors(ax, shuffled, keep, shuffles=None):
    ema = shuffled[shuffled["estimator"] == "ema"]
    keeps = sorted(ema["keep"].dropna().unique())
    colour = figures.MEANING["moving average"]
    for i, k in enumerate(keeps):
        g = _keep(ema, k)
        strong = abs(k - keep) < SAME
        c = figures.shade(colour, i, len(keeps)) if len(keeps) > 1 else colour
        lw = 1.8 if strong else 1.0
        ax.plot(g["batch_size"], g["running_error"], "-o", ms=3.5, lw=lw, color=c, label=f"measured, $k={k:g}$")
        ax.plot(g["batch_size"], g["predicted_error"], ":x", ms=4, lw=1.0, color=c, label=f"$k^u$ predicted, $k={k:g}$")
    strong = next(
        (figures.shade(colour, i, len(keeps)) for i, k in enumerate(keeps) if abs(k - keep) < SAME and len(keeps) > 1),
        colour,
    )
    _spread(ax, shuffles, "ema", "running_error", strong, keep)
    _spread(ax, shuffles, "ema", "batch_estimate_error", figures.MEANING["one batch"], keep)
    g = _keep(ema, keep)
    ax.plot(
        g["batch_size"],
        g["batch_estimate_error"],
        "-.s",
        ms=3,
        lw=1.2,
        color=figures.MEANING["one batch"],
        label="one batch's own estimate",
    )
    measured = ema[["running_error", "batch_estimate_error"]]
    ax.set_ylim(bottom=float(measured.min().min()) / 10)  # keep^u of a fast-forgetting EMA falls far below
    ax.set_title("shuffled batches: error of the statistics")
    ax.set_ylabel("RMS error vs. population (mean, var)")
    return strong


def _divergence(bx, passes, keep, shuffles=None):
    for order, (style, marker) in ORDERS.items():
        for est, label in (("ema", f"moving average, $k={keep:g}$"), ("pooled", "pooled statistics")):
            rows = passes[(passes["order"] == order) & (passes["estimator"] == est)]
            rows = _keep(rows, keep) if est == "ema" else rows.sort_values("batch_size")
            colour = figures.MEANING["moving average" if est == "ema" else "pooled"]
            bx.plot(
                rows["batch_size"],
                rows["train_eval_rmse"],
                ls=style,
                marker=marker,
                ms=3.5,
                lw=1.2,
                color=colour,
                label=f"{order}, {label}",
            )
            if order == "shuffled":
                _spread(bx, shuffles, est, "train_eval_rmse", colour, keep if est == "ema" else None)
    bx.set_title("train/inference output divergence")
    bx.set_ylabel("RMSE, training vs. inference mode")


def running_stats(
    passes: pd.DataFrame,
    keep: float,
    shuffles: pd.DataFrame | None = None,
    width: float | None = None,
    height: float = 3.4,
):
    """Study 3's figure from ``passes.csv``; ``keep`` is the trained networks' keep factor;
    ``shuffles``: ``shuffles.csv``, the shuffled pass repeated (bands: range over shuffles)."""
    width = figures.width("running_stats") if width is None else width
    fig, (ax, bx) = figures.new(width, height, ncols=2)
    shuffled = passes[passes["order"] == "shuffled"]
    band = {ax: _errors(ax, shuffled, keep, shuffles), bx: figures.MEANING["moving average"]}
    _divergence(bx, passes, keep, shuffles)
    for a in (ax, bx):
        a.set_yscale("log")
        figures.log2_axis(a, sorted(shuffled["batch_size"].unique()))
        a.yaxis.set_minor_locator(figures.matplotlib.ticker.NullLocator())
        a.set_xlabel("batch size $b$")
        a.grid(True, which="major", lw=0.3, alpha=0.5)
    kw = dict(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2), handlelength=2.2, columnspacing=0.8)
    for a, ncol in ((ax, 2), (bx, 1)):
        handles, labels = a.get_legend_handles_labels()
        if shuffles is not None and len(shuffles):
            key = _spread_key(shuffles, band[a])
            handles, labels = [*handles, key[0]], [*labels, key[1]]
        a.legend(handles, labels, ncol=ncol, **kw)
    return fig
