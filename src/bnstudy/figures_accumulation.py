"""The accumulation study's figure: test accuracy of each configuration, one panel per
micro-batch, in inference mode (filled) and training mode (hollow), in the house style of
:mod:`bnstudy.figures` (batch norm's and ghost batch norm's registry styles)."""

from __future__ import annotations

import pandas as pd

from .designs import ACCUMULATION_CONFIGS as CONFIGS
from .figures import COLOURS, MARKERS, new, width

KIND = {"large": "batchnorm", "accumulate": "batchnorm", "ghost": "ghostbatchnorm", "small": "batchnorm"}
TICKS = {
    "large": "batch {B}",
    "accumulate": "{k}$\\times${m}\naccum.",
    "ghost": "ghost\nvirtual {m}",
    "small": "batch {m}",
}


def accumulation(cells: pd.DataFrame, batch_size: int, fig_width: float | None = None):
    """``cells``: :func:`bnstudy.accumulation_report.cell_table` rows (micro_batch, config, mode,
    mean, ci_low, ci_high). Each configuration's mean over seeds with its Student-t interval."""
    fig_width = width("accumulation") if fig_width is None else fig_width
    micro = sorted(int(m) for m in cells.micro_batch.unique())
    fig, axes = new(fig_width, 2.5, ncols=len(micro), sharey=True, squeeze=False)
    for ax, m in zip(axes[0], micro):
        for i, config in enumerate(CONFIGS):
            kind = KIND[config]
            for mode, dx, face in (("inference", -0.12, COLOURS[kind]), ("training", 0.12, "white")):
                r = cells[(cells.micro_batch == m) & (cells.config == config) & (cells["mode"] == mode)].iloc[0]
                ax.errorbar(
                    [i + dx],
                    [r["mean"]],
                    yerr=[[r["mean"] - r.ci_low], [r.ci_high - r["mean"]]],
                    ls="none",
                    marker=MARKERS[kind],
                    color=COLOURS[kind],
                    mfc=face,
                    capsize=2,
                    lw=0.8,
                )
        ax.set_xticks(range(len(CONFIGS)))
        ax.set_xticklabels([TICKS[c].format(B=batch_size, m=m, k=batch_size // m) for c in CONFIGS])
        ax.set_xlim(-0.5, len(CONFIGS) - 0.5)
        ax.set_title(f"micro-batch {m}")
    axes[0][0].set_ylabel("test accuracy")
    filled = axes[0][0].errorbar([], [], ls="none", marker="o", color="0.3", label="inference mode")
    hollow = axes[0][0].errorbar([], [], ls="none", marker="o", color="0.3", mfc="white", label="training mode")
    fig.legend(handles=[filled, hollow], loc="outside lower center", ncol=2, frameon=False)
    return fig
