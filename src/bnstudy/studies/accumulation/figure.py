"""The accumulation study's figure: test accuracy of each configuration, one panel per
micro-batch, in inference mode (filled) and training mode (hollow), in the house style of
:mod:`bnstudy.paper.figures` (batch norm's and ghost batch norm's registry styles)."""

from __future__ import annotations

import pandas as pd
from matplotlib.lines import Line2D

from bnstudy.base.designs import ACCUMULATION_CONFIGS as CONFIGS
from bnstudy.paper.figures import COLOURS, LABELS, MARKERS, new, width

KIND = {
    "large": "batchnorm",
    "accumulate": "batchnorm",
    "ghost": "ghostbatchnorm",
    "small": "batchnorm",
    "scaled": "batchnorm",
}
TICKS = {
    "large": "batch {B}",
    "accumulate": "{k}$\\times${m}\naccum.",
    "ghost": "ghost\nvirtual {m}",
    "small": "batch {m}",
    "scaled": "batch {m}\nrate$\\times${m}/{B}",
}


def accumulation(cells: pd.DataFrame, batch_size: int, fig_width: float | None = None):
    """``cells``: :func:`bnstudy.studies.accumulation.report.cell_table` rows (micro_batch, config, mode,
    mean, ci_low, ci_high). Each configuration's mean over seeds with its Student-t interval."""
    fig_width = width("accumulation") if fig_width is None else fig_width
    micro = sorted(int(m) for m in cells.micro_batch.unique())
    fig, axes = new(fig_width, 2.5, ncols=len(micro), sharey=True, squeeze=False)
    kinds = list(dict.fromkeys(KIND[c] for c in CONFIGS))
    for ax, m in zip(axes[0], micro):
        # one series per normaliser and mode, over the configurations drawn with that normaliser
        for kind in kinds:
            for mode, dx, face in (("inference", -0.12, COLOURS[kind]), ("training", 0.12, "white")):
                at = [i for i, c in enumerate(CONFIGS) if KIND[c] == kind]
                r = pd.concat(
                    [
                        cells[(cells.micro_batch == m) & (cells.config == CONFIGS[i]) & (cells["mode"] == mode)]
                        for i in at
                    ]
                )
                ax.errorbar(
                    [i + dx for i in at],
                    r["mean"],
                    yerr=[r["mean"] - r.ci_low, r.ci_high - r["mean"]],
                    ls="none",
                    marker=MARKERS[kind],
                    color=COLOURS[kind],
                    mfc=face,
                    capsize=2,
                    lw=0.8,
                    label=f"{LABELS[kind]}, {mode} mode",
                )
        ax.set_xticks(range(len(CONFIGS)))
        ax.set_xticklabels([TICKS[c].format(B=batch_size, m=m, k=batch_size // m) for c in CONFIGS])
        ax.set_xlim(-0.5, len(CONFIGS) - 0.5)
        ax.set_title(f"micro-batch {m}")
    axes[0][0].set_ylabel("test accuracy")
    # keys: each normaliser drawn (its colour and marker), then the modes (filled / hollow)
    handles = [Line2D([], [], ls="none", marker=MARKERS[k], color=COLOURS[k]) for k in kinds]
    labels = [LABELS[k] for k in kinds]
    handles += [Line2D([], [], ls="none", marker="o", color="0.3", mfc=face) for face in ("0.3", "white")]
    labels += ["inference mode (filled)", "training mode (hollow)"]
    fig.legend(handles, labels, loc="outside lower center", ncol=4, frameon=False)
    return fig
