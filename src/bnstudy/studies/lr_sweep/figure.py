"""The learning-rate sweep's figure: accuracy against batch size at each cell's chosen rate
(top) and the chosen rates (bottom), in the house style of :mod:`bnstudy.paper.figures`."""

from __future__ import annotations

import pandas as pd

from bnstudy.paper.figures import COLOURS, LABELS, LINESTYLES, MARKERS, log2_axis, new, width
from bnstudy.studies.lr_sweep.grid_rate import at_rate

NORMALISERS = ("none", "batchnorm")


def lr_sweep(best: pd.DataFrame, rates: pd.DataFrame, grid_lr, fig_width: float | None = None):
    """Top: test accuracy (inference mode, mean over seeds with its Student-t band) against training
    batch size at each cell's chosen rate (filled markers) and at the grid's rate ``grid_lr``
    (hollow markers, thin line). Bottom: the chosen rate of each cell."""
    fig_width = width("lr_sweep") if fig_width is None else fig_width
    fig, (ax, bx) = new(fig_width, 3.8, nrows=2, sharex=True, height_ratios=[3, 2])
    grid = at_rate(rates, grid_lr)
    for norm in NORMALISERS:
        style = dict(ls=LINESTYLES[norm], marker=MARKERS[norm], color=COLOURS[norm])
        g = best[best.normaliser == norm].sort_values("batch_size")
        if g.empty:
            continue
        ax.plot(g.batch_size, g.test_mean, lw=1.3, label=f"{LABELS[norm]}, chosen rate", **style)
        ax.fill_between(g.batch_size, g.test_ci_low, g.test_ci_high, color=COLOURS[norm], alpha=0.15, lw=0)
        r = grid[grid.normaliser == norm].sort_values("batch_size")
        ax.plot(r.batch_size, r.test_mean, lw=0.8, mfc="white", label=f"{LABELS[norm]}, grid's rate", **style)
        bx.plot(g.batch_size, g.lr, lw=1.0, **style)
    bx.set_yscale("log")
    lrs = sorted(float(v) for v in rates.lr.unique())
    bx.set_yticks(lrs)
    bx.set_yticklabels([f"{v:g}" for v in lrs])
    bx.minorticks_off()
    bx.set_ylim(lrs[0] / 1.6, lrs[-1] * 1.6)
    log2_axis(bx, sorted(int(b) for b in best.batch_size.unique()))
    ax.set_ylabel("test accuracy")
    bx.set_ylabel("chosen rate")
    bx.set_xlabel("training batch size")
    fig.legend(loc="outside lower center", ncol=2, frameon=False, handlelength=2.2, columnspacing=0.8)
    return fig
