"""The fine-tuning study's figure: the networks along the fine-tuning.

One column per learning rate. Top, the inference-mode test accuracy after each
measured step; bottom, the distance of the running statistics to the exact
statistics of the training half (the variance's RMS log-ratio,
:func:`bnstudy.evaluation.distance.distances`, mean over the two layers). Means over the
seeds. A shade of batch norm's colour and a marker tell the streams apart (light with
circles: random batches, dark with squares: one-class batches;
:func:`bnstudy.paper.figures.series`, so that it reads in greyscale), line styles the modes
(solid: live, dotted: frozen); the horizontal line, in batch norm's registry colour and
style, is the starting networks' value. With the per-network rows (``along.csv``), each line has a band
spanning the networks (minimum to maximum over seeds at each measured step).
"""

from __future__ import annotations

import pandas as pd
from matplotlib.patches import Patch

from bnstudy.base.designs import FINETUNE_MODES as MODES
from bnstudy.base.designs import FINETUNE_STREAM_WORDS as STREAM_WORDS
from bnstudy.base.designs import FINETUNE_STREAMS as STREAMS
from bnstudy.paper import figures
from bnstudy.paper.latex import power_of_ten

MODE_STYLE = {"live": "-", "frozen": ":"}
ROWS = (("inference_accuracy", "test accuracy"), ("var_to_exact", "variance distance"))


def finetune(
    along: pd.DataFrame,
    start: dict,
    normaliser: str = "batchnorm",
    width=None,
    height: float = 3.6,
    networks: pd.DataFrame | None = None,
):
    """The figure from :func:`bnstudy.studies.finetune.summary.along_means`' rows and the starting
    networks' means ``start`` (``{"inference_accuracy": ..., "var_to_exact": ...}``);
    ``networks``: the per-network rows of ``along.csv`` (a ``seed`` column), for the bands."""
    width = figures.width("finetune") if width is None else width
    rates = sorted(float(r) for r in along["lr"].unique())
    fig, axes = figures.new(width, height, nrows=2, ncols=len(rates), sharex=True, sharey="row", squeeze=False)
    colour = figures.COLOURS[normaliser]
    for j, lr in enumerate(rates):
        for i, (measure, label) in enumerate(ROWS):
            ax = axes[i][j]
            for k, stream in enumerate(STREAMS):
                # the stream's shade and marker (lighter: random batches), the mode's line style
                style = figures.series(k, len(STREAMS), colour)
                shade = style["color"]
                for m, mode in enumerate(MODES):
                    g = along[(along["lr"] == lr) & (along["stream"] == stream) & (along["mode"] == mode)]
                    g = g.sort_values("step")
                    if networks is not None:
                        n = networks[
                            (networks["lr"] == lr) & (networks["stream"] == stream) & (networks["mode"] == mode)
                        ]
                        span = n.groupby("step")[measure].agg(["min", "max"]).sort_index()
                        ax.fill_between(span.index, span["min"], span["max"], color=shade, alpha=0.15, lw=0)
                    ax.plot(
                        g["step"],
                        g[measure],
                        lw=1.0,
                        ms=3,
                        markevery=figures.staggered(k * len(MODES) + m, len(STREAMS) * len(MODES), len(g)),
                        label=f"{mode}, {STREAM_WORDS[stream]}",
                        **(style | {"ls": MODE_STYLE[mode]}),
                    )
            ax.axhline(start[measure], color=colour, ls=figures.LINESTYLES[normaliser], lw=0.8, label="start")
            ax.grid(True, lw=0.3, alpha=0.5)
            if j == 0:
                ax.set_ylabel(label)
        axes[0][j].set_title(f"learning rate {power_of_ten(lr)}")
        axes[-1][j].set_xlabel("fine-tuning step")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if networks is not None:
        handles.append(Patch(color=figures.shade(colour, 2, 4), alpha=0.15, lw=0))
        labels.append(f"range over {networks['seed'].nunique()} networks")
    fig.legend(handles, labels, frameon=False, loc="outside lower center", ncol=3)
    return fig
