"""The training curves' figure: validation accuracy after each epoch (mean over seeds), one panel per
training batch size, one line per normaliser in its colour, marker and line style (told apart in
greyscale too), in the house style of :mod:`bnstudy.paper.figures`."""

from __future__ import annotations

import pandas as pd
from matplotlib.ticker import MaxNLocator

from bnstudy.paper.figures import COLOURS, LABELS, LINESTYLES, MARKERS, new, width


def curves(by_epoch: pd.DataFrame, fig_width: float | None = None):
    """``by_epoch``: :func:`bnstudy.studies.curves.report.by_epoch` rows."""
    fig_width = width("curves") if fig_width is None else fig_width
    sizes = sorted(int(b) for b in by_epoch.batch_size.unique())
    fig, axes = new(fig_width, 2.3, ncols=len(sizes), sharey=True, squeeze=False)
    names = list(dict.fromkeys(by_epoch.normaliser))
    epochs = int(by_epoch.epoch.max())
    every = max(1, epochs // 5)
    for ax, b in zip(axes[0], sizes, strict=True):
        for name in names:
            g = by_epoch[(by_epoch.normaliser == name) & (by_epoch.batch_size == b)].sort_values("epoch")
            if g.empty:
                continue
            label = LABELS[name] if b == sizes[0] else None  # one legend entry per normaliser
            ax.plot(g.epoch, 100 * g.validation_accuracy, color=COLOURS[name], marker=MARKERS[name],
                    ls=LINESTYLES[name], lw=0.9, ms=3, markevery=every, label=label)  # fmt: skip
        ax.set_title(f"$b = {b}$")
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
    axes[0][0].set_ylabel("validation accuracy (%)")
    fig.legend(loc="outside lower center", ncol=min(len(names), 5), frameon=False)
    return fig
