"""The convolutional network beside the MLP, in the house style of :mod:`bnstudy.paper.figures`:
(a) inference-mode test accuracy of every normaliser, (b) batch norm in inference and in
training mode, (c) batch norm's flip rate at batches of two, all against the training batch
size; the CNN drawn with filled markers and a band, the MLP with hollow markers and a thin line."""

from __future__ import annotations

import pandas as pd

from bnstudy.paper.figures import COLOURS, FREE_MARKERS, LABELS, LINESTYLES, MARKERS, log2_axis, new, width

ORDER = ("none", "batchnorm", "groupnorm", "layernorm")
FLIPS = (("exact", FREE_MARKERS[0], "every companion"), ("own_class", FREE_MARKERS[3], "own class"))
FLIPS += (("other_class", FREE_MARKERS[2], "other class"),)


def _line(ax, side, model, norm, measure, label, **style):
    g = side[(side.model == model) & (side.normaliser == norm) & (side.measure == measure)]
    g = g.sort_values("batch_size")
    if g.empty:
        return
    if model == "cnn":
        ax.plot(g.batch_size, g["mean"], lw=1.3, label=label, **style)
        ax.fill_between(g.batch_size, g.ci_low, g.ci_high, color=style["color"], alpha=0.15, lw=0)
    else:
        ax.plot(g.batch_size, g["mean"], lw=0.8, mfc="white", label=label, **style)


def conv(side: pd.DataFrame, fig_width: float | None = None):
    """The figure of the side-by-side table of :func:`bnstudy.studies.conv.report.report`."""
    fig_width = width("conv") if fig_width is None else fig_width
    fig, (ax, bx, cx) = new(fig_width, 3.0, ncols=3)
    sizes = sorted(int(b) for b in side[side.model == "cnn"].batch_size.unique())
    for norm in (n for n in ORDER if n in set(side.normaliser)):
        style = dict(ls=LINESTYLES[norm], marker=MARKERS[norm], color=COLOURS[norm])
        for model in ("cnn", "mlp"):
            label = LABELS[norm] if model == "cnn" else None
            _line(ax, side, model, norm, "inference_accuracy", label, **style)
    bn = COLOURS["batchnorm"]
    for model, name in (("cnn", "CNN"), ("mlp", "MLP")):
        _line(
            bx,
            side,
            model,
            "batchnorm",
            "inference_accuracy",
            f"{name}, inference",
            ls=LINESTYLES["batchnorm"],
            marker=MARKERS["batchnorm"],
            color=bn,
        )
        _line(
            bx,
            side,
            model,
            "batchnorm",
            "train_mode_accuracy",
            f"{name}, training mode",
            ls=":",
            marker=FREE_MARKERS[1],
            color=bn,
        )
        for design, marker, label in FLIPS:
            text = f"{name}, {label}" if model == "cnn" or design == "exact" else None
            _line(cx, side, model, "batchnorm", f"{design}_flip_rate", text, ls="-", marker=marker, color=bn)
    for axis, title in ((ax, "(a) inference mode"), (bx, "(b) batch norm"), (cx, "(c) flips at batch 2")):
        log2_axis(axis, sizes)
        axis.set_xlabel("training batch size")
        axis.set_title(title)
        # each panel's key right under its own axis label, in its column
        axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False, fontsize=7, handlelength=1.8)
    ax.set_ylabel("test accuracy")
    cx.set_ylabel("flip rate")
    return fig
