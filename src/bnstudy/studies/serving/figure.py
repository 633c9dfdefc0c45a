"""The serving study's figure: training-mode accuracy along the served stream.

Left the random stream, right the class-sorted one; x the position of the served
batch in the stream, y its training-mode accuracy averaged over the seeds; one
line per training batch size, in shades of batch norm's colour (lighter: smaller
training batches), each with a marker and a line style of its own
(:func:`bnstudy.paper.figures.series`: it reads in greyscale), its markers set between the
other lines' (lines that lie on one another still show each marker). The horizontal
line, in batch norm's registry style, is the inference-mode accuracy before the stream,
averaged over every served network.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.base.designs import SERVING_STREAMS as STREAMS
from bnstudy.paper import figures

TITLES = {"random": "random stream", "sorted": "class-sorted stream"}


def serving(along: pd.DataFrame, before: float, normaliser: str = "batchnorm", width=None, height: float = 2.6):
    """The figure from :func:`bnstudy.studies.serving.estimates.along_means`' rows and the mean accuracy ``before``."""
    width = figures.width("serving") if width is None else width
    fig, axes = figures.new(width, height, ncols=2, sharey=True)
    sizes = sorted(int(b) for b in along["train_batch_size"].unique())
    colour = figures.COLOURS[normaliser]
    for ax, stream in zip(axes, STREAMS):
        rows = along[along["stream"] == stream]
        for i, b in enumerate(sizes):
            g = rows[rows["train_batch_size"] == b].sort_values("position")
            ax.plot(
                g["position"],
                g["accuracy"],
                lw=0.9,
                label=f"trained at $b={b}$",
                ms=3,
                markevery=figures.staggered(i, len(sizes), len(g)),
                **figures.series(i, len(sizes), colour),  # told apart in greyscale too
            )
        ax.axhline(
            before,
            color=colour,
            ls=figures.LINESTYLES[normaliser],
            lw=1.0,
            label="inference mode, before",
        )
        ax.set_title(TITLES[stream])
        ax.set_xlabel("served batch")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(True, lw=0.3, alpha=0.5)
    axes[0].set_ylabel("training-mode accuracy")
    fig.legend(*axes[0].get_legend_handles_labels(), frameon=False, loc="outside lower center", ncol=4)
    return fig
