"""Study 2's figures: accuracy against training batch size in both modes with the paired
differences between normalisers, and batch norm's running statistics replaced by each remedy.
Drawn in the house style of :mod:`bnstudy.paper.figures`."""

from __future__ import annotations

import pandas as pd

from bnstudy.base import normalisers
from bnstudy.paper.figures import (
    COLOURS,
    FREE_MARKERS,
    LABELS,
    LINESTYLES,
    MARKERS,
    dodge,
    log2_axis,
    new,
    reference_line,
    spread,
    width,
)

# batch norm's running statistics, as trained and replaced by each remedy (mode in the summary)
REMEDY_LINES = (
    ("inference", "EMA (trained)"),
    ("debiased_ema", "debiased EMA"),
    ("cumulative", "cumulative"),
    ("precise_bn", "PreciseBN"),
    ("exact", "exact"),
)
# each remedy's paired comparison with the trained statistics in gains.csv (bnstudy.studies.batch_size.paired)
REMEDY_GAINS = {"debiased_ema": "debiased_ema_vs_ema", "cumulative": "cumulative_vs_ema"}
REMEDY_GAINS |= {"precise_bn": "precise_bn_vs_ema", "exact": "exact_vs_ema"}

# the top panel's series set apart sideways over this share of an octave about each batch size
SPREAD = 0.7


def _band(ax, g, colour, alpha=0.15, x=None):
    ax.fill_between(g["batch_size"] if x is None else x, g["ci_low"], g["ci_high"], color=colour, alpha=alpha, lw=0)


def normaliser_pairs(gains: pd.DataFrame) -> list[tuple[str, str, str]]:
    """``(comparison, A, B)`` for every paired comparison ``A_vs_B`` of ``gains`` whose both
    sides are normalisers (inference mode), in registry order of ``A``."""
    found = []
    for name in dict.fromkeys(gains["comparison"]):
        a, _, b = name.partition("_vs_")
        if a in normalisers.NAMES and b in normalisers.NAMES:
            found.append((name, a, b))
    return sorted(found, key=lambda t: (normalisers.NAMES.index(t[1]), normalisers.NAMES.index(t[2])))


def _paired_points(ax, rows, x_factor, label, **style):
    """Mean paired difference per batch size, in points, with its interval as an error bar."""
    g = rows.sort_values("batch_size")
    mean, low, high = 100 * g["gain"], 100 * g["ci_low"], 100 * g["ci_high"]
    ax.errorbar(
        g["batch_size"] * x_factor,
        mean,
        yerr=[mean - low, high - mean],
        capsize=2,
        elinewidth=0.8,
        lw=0.9,
        label=label,
        **style,
    )


def batch_size(
    summary: pd.DataFrame,
    gains: pd.DataFrame | None = None,
    width: float = width("batch_size"),
    height: float = 5.2,
):
    """Test accuracy against training batch size, every normaliser of ``summary`` in
    inference mode (filled markers) and, for those that use batch statistics, in
    training mode (hollow markers, thin line) (top), each series set apart sideways from the
    others about every batch size (:func:`bnstudy.paper.figures.spread`: curves that lie on one
    another all show their markers; the ticks stay at the batch sizes); below, each paired comparison of two
    normalisers in ``gains`` (``A_vs_B``: mean of the per-seed differences A - B in points,
    with its paired interval), in the style of A."""
    pairs = normaliser_pairs(gains) if gains is not None else []
    if pairs:
        fig, (ax, bx) = new(width, height, nrows=2, sharex=True, height_ratios=[3, 2])
    else:
        fig, ax = new(width, height * 0.65)
    kinds = [n for n in normalisers.NAMES if n in set(summary["normaliser"])]
    drawn = [(n, "inference") for n in kinds] + [(n, "training") for n in kinds if n in normalisers.BATCH_NAMES]
    drawn.sort(key=lambda t: kinds.index(t[0]))  # each normaliser's modes side by side, inference first
    for k, (norm, mode) in enumerate(drawn):
        g = summary[(summary["normaliser"] == norm) & (summary["mode"] == mode)].sort_values("batch_size")
        train = mode == "training"
        x = g["batch_size"] * spread(k, len(drawn), SPREAD)
        label = LABELS[norm] + (", training mode" if train else "")
        marks = dict(marker=MARKERS[norm], ms=3.5, mfc="white" if train else COLOURS[norm], color=COLOURS[norm])
        ax.plot(x, g["mean"], ls=LINESTYLES[norm], lw=0.8 if train else 1.3, label=label, **marks)
        # the markers again, above every series' line (curves that lie on one another cross them)
        ax.plot(x, g["mean"], ls="none", zorder=2.5, label=label, **marks)
        _band(ax, g, COLOURS[norm], x=x)
    ax.set_ylabel("test accuracy")
    sizes = sorted(summary["batch_size"].unique())
    last = ax
    if pairs:
        for i, (name, a, b) in enumerate(pairs):
            style = dict(ls=LINESTYLES[a], marker=MARKERS[a], color=COLOURS[a], ms=4)
            rows = gains[gains["comparison"] == name]
            _paired_points(bx, rows, dodge(i, len(pairs)), f"{LABELS[a]} $-$ {LABELS[b]}", **style)
        reference_line(bx, 0)
        bx.set_ylabel("paired difference,\npoints")
        bx.legend(loc="best", frameon=False, handlelength=2.2, borderaxespad=0.3)
        last = bx
    log2_axis(last, sizes)
    last.set_xlabel("training batch size")
    keys = {}  # one key per series: its line with its markers, not the markers drawn again
    for handle, label in zip(*ax.get_legend_handles_labels()):
        keys.setdefault(label, handle)
    fig.legend(
        list(keys.values()),
        list(keys),
        loc="outside lower center",
        ncol=2,
        frameon=False,
        handlelength=2.2,
        columnspacing=0.8,
    )
    return fig


def batch_size_remedies(
    summary: pd.DataFrame,
    gains: pd.DataFrame | None = None,
    width: float = width("batch_size_remedies"),
    height: float = 3.8,
):
    """Batch norm's inference accuracy with its running statistics as trained and replaced
    by each remedy, no normaliser for reference (top); each remedy's accuracy minus
    the trained statistics', in points (bottom: from ``gains``, the mean of the per-seed
    differences with its paired interval, the seeds being the same networks)."""
    fig, (ax, bx) = new(width, height, nrows=2, sharex=True, height_ratios=[3, 2])
    bn, colour = "batchnorm", COLOURS["batchnorm"]
    base = summary[(summary["normaliser"] == "none") & (summary["mode"] == "inference")].sort_values("batch_size")
    if len(base):
        style = dict(ls=LINESTYLES["none"], marker=MARKERS["none"], color=COLOURS["none"])
        ax.plot(base["batch_size"], base["mean"], label=LABELS["none"], **style)
        _band(ax, base, COLOURS["none"], 0.1)
    rows = summary[summary["normaliser"] == bn]
    drawn = [m for m, _ in REMEDY_LINES[1:] if gains is not None and (gains["comparison"] == REMEDY_GAINS[m]).any()]
    for i, (mode, label) in enumerate(REMEDY_LINES):
        g = rows[rows["mode"] == mode].sort_values("batch_size")
        if g.empty:
            continue
        marker = MARKERS[bn] if mode == "inference" else FREE_MARKERS[i - 1]
        style = dict(ls=LINESTYLES[bn], marker=marker, ms=5, color=colour, mfc="white" if i % 2 else colour)
        ax.plot(g["batch_size"], g["mean"], label=f"{LABELS[bn]}, {label}", lw=1.3 if i == 0 else 0.9, **style)
        if i == 0:
            _band(ax, g, colour, 0.12)
        elif mode in drawn:
            gain = gains[gains["comparison"] == REMEDY_GAINS[mode]]
            _paired_points(bx, gain, dodge(drawn.index(mode), len(drawn)), None, **style)
    reference_line(bx, 0, color=colour, lw=1.3, ls=LINESTYLES[bn])
    log2_axis(bx, sorted(summary["batch_size"].unique()))
    ax.set_ylabel("inference-mode\ntest accuracy")
    bx.set_ylabel("gain over EMA\n(trained), points")
    bx.set_xlabel("training batch size")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2, frameon=False)
    return fig
