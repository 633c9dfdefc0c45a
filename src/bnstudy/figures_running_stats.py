"""Study 3's figure: the running statistics of one batch-norm layer after one pass.

Left: error of the moving average's running statistics against the exact
population statistics for each keep factor (shades of the moving average's
colour, lighter: forgets faster), beside what ``keep**u`` times the initial offset
predicts, and the error of one batch's own estimate. Right: the RMSE between
training-mode and inference-mode outputs with the moving average and with pooled
statistics, for shuffled (solid) and sorted (dashed) batches.
"""

from __future__ import annotations

import pandas as pd

from . import figures

SAME = 1e-12  # keep factors are compared to this tolerance
ORDERS = {"shuffled": ("-", "o"), "sorted": ("--", "^")}


def _keep(rows: pd.DataFrame, keep: float) -> pd.DataFrame:
    return rows[(rows["keep"] - keep).abs() < SAME].sort_values("batch_size")


def _errors(ax, shuffled, keep):
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


def _divergence(bx, passes, keep):
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
    bx.set_title("train/inference output divergence")
    bx.set_ylabel("RMSE, training vs. inference mode")


def running_stats(passes: pd.DataFrame, keep: float, width: float | None = None, height: float = 3.4):
    """Study 3's figure from ``passes.csv``; ``keep`` is the trained networks' keep factor."""
    width = figures.width("running_stats") if width is None else width
    fig, (ax, bx) = figures.new(width, height, ncols=2)
    shuffled = passes[passes["order"] == "shuffled"]
    _errors(ax, shuffled, keep)
    _divergence(bx, passes, keep)
    for a in (ax, bx):
        a.set_yscale("log")
        figures.log2_axis(a, sorted(shuffled["batch_size"].unique()))
        a.yaxis.set_minor_locator(figures.matplotlib.ticker.NullLocator())
        a.set_xlabel("batch size $b$")
        a.grid(True, which="major", lw=0.3, alpha=0.5)
    kw = dict(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2), handlelength=2.2, columnspacing=0.8)
    ax.legend(ncol=2, **kw)
    bx.legend(ncol=1, **kw)
    return fig
