"""The budget study's figure: test accuracy against the exact statistics (paired difference, points)
by the rows pooled, one line per training batch size in a shade of batch norm's colour, lightest for the
smallest batch, with a marker and line style of its own (:func:`bnstudy.paper.figures.series`: it reads in
greyscale), in the house style of :mod:`bnstudy.paper.figures`; the running averages' difference as a hollow
marker of the line's own shape at the left of each line, with the interval the paper quotes for it: the
batch-size study's, Bonferroni-adjusted (:func:`bnstudy.studies.precise_rows.report.adjusted`)."""

from __future__ import annotations

import pandas as pd

from bnstudy.paper.figures import COLOURS, dodge, new, reference_line, series, width


def precise_rows(cells: pd.DataFrame, fig_width: float | None = None):
    """``cells``: :func:`bnstudy.studies.precise_rows.report.adjusted` rows (batch_size, key, rows_used,
    gap and the interval each reports, ci_low_adj, ci_high_adj)."""
    fig_width = width("precise_rows") if fig_width is None else fig_width
    fig, ax = new(fig_width, 2.6)
    sizes = sorted(int(b) for b in cells.batch_size.unique())
    least = min(int(k) for k in cells.key.unique() if k not in ("ema", "all"))
    for i, b in enumerate(sizes):
        style, shift = series(i, len(sizes), COLOURS["batchnorm"]), dodge(i, len(sizes))
        at = cells[(cells.batch_size == b) & (cells.key != "ema")].sort_values("rows_used")
        x = at.rows_used * shift
        ax.errorbar(x, 100 * at.gap, yerr=[100 * (at.gap - at.ci_low_adj), 100 * (at.ci_high_adj - at.gap)], capsize=2,
                    lw=0.9, label=f"trained at $b={b}$", **style)  # fmt: skip
        ema = cells[(cells.batch_size == b) & (cells.key == "ema")].iloc[0]
        low, high = 100 * (ema.gap - ema.ci_low_adj), 100 * (ema.ci_high_adj - ema.gap)
        left = least / 2 * shift  # the running averages, left of the smallest budget
        ax.errorbar([left], [100 * ema.gap], yerr=[[low], [high]], capsize=2, lw=0.9, mfc="white",
                    **(style | {"ls": "none"}))  # fmt: skip
    reference_line(ax, 0.0)
    ax.set_xscale("log", base=2)
    pooled = cells[cells.key != "ema"]
    budgets = sorted(int(k) for k in pooled[pooled.key != "all"].key.unique())
    whole = int(pooled[pooled.key == "all"].rows_used.max())
    ticks = [min(budgets) / 2, *budgets, whole]
    ax.set_xticks(ticks, ["running\naverages", *(f"{k:,}" for k in budgets), "whole\npass"])
    ax.minorticks_off()
    ax.set_xlabel("training rows pooled")
    ax.set_ylabel("difference to exact (points)")
    fig.legend(loc="outside lower center", ncol=min(len(sizes), 3), frameon=False)
    return fig
