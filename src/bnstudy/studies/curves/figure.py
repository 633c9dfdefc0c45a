"""The training curves' figure: validation accuracy after each epoch (mean over seeds; without a
validation split, the training loss and accuracy: :func:`training_curves`), one panel per
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


def training_curves(by_epoch: pd.DataFrame, fig_width: float | None = None):
    """A data set without a validation split: the training loss (top row, log scale) and the training
    accuracy (bottom row) by epoch, mean over seeds; ``by_epoch``:
    :func:`bnstudy.studies.curves.training.by_epoch` rows."""
    fig_width = width("curves") if fig_width is None else fig_width
    sizes = sorted(int(b) for b in by_epoch.batch_size.unique())
    fig, axes = new(fig_width, 3.9, nrows=2, ncols=len(sizes), sharex=True, sharey="row", squeeze=False)
    names = list(dict.fromkeys(by_epoch.normaliser))
    every = max(1, int(by_epoch.epoch.max()) // 5)
    for col, b in enumerate(sizes):
        for name in names:
            g = by_epoch[(by_epoch.normaliser == name) & (by_epoch.batch_size == b)].sort_values("epoch")
            if g.empty:
                continue
            style = dict(color=COLOURS[name], marker=MARKERS[name], ls=LINESTYLES[name], lw=0.9, ms=3,
                         markevery=every)  # fmt: skip
            label = LABELS[name] if col == 0 else None  # one legend entry per normaliser
            axes[0][col].plot(g.epoch, g.loss, label=label, **style)
            axes[1][col].plot(g.epoch, 100 * g.train_accuracy, **style)
        axes[0][col].set_yscale("log")
        axes[0][col].set_title(f"$b = {b}$")
        axes[1][col].set_xlabel("epoch")
        axes[1][col].xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
    axes[0][0].set_ylabel("training loss")
    axes[1][0].set_ylabel("training accuracy (%)")
    fig.legend(loc="outside lower center", ncol=min(len(names), 5), frameon=False)
    return fig
