"""Byte-stable matplotlib figures in one house style, drawn at their printed size.

Every figure is made at the width it is printed at in the paper (``\\linewidth``
of an A4 article with the paper's margins, or a fraction of it:
:data:`PRINTED_WIDTH`), so a font size here is the size on paper; none is below
:data:`MIN_FONT_PT`. Each normaliser is drawn in its registry colour, marker and
line style (:mod:`bnstudy.nets.normalisers`), the same in every figure; the other
colours (:data:`MEANING`) each mean one thing in every figure.

This module holds the style, saving and Study 2's figures; Study 1's and Study 3's
are :mod:`bnstudy.studies.companions.figure` and :mod:`bnstudy.studies.running_stats.figure`.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from bnstudy.base.io import atomic_path  # noqa: E402
from bnstudy.nets import normalisers  # noqa: E402

# paper/main.tex: \documentclass[a4paper]{article} with \usepackage[margin=2.2cm]{geometry}
PAGE_WIDTH_CM, MARGIN_CM = 21.0, 2.2
LINEWIDTH = (PAGE_WIDTH_CM - 2 * MARGIN_CM) / 2.54  # inches
# width of each figure in the paper, as a fraction of \linewidth (its \includegraphics)
PRINTED_WIDTH = {
    "companions": 1.0,
    "batch_size": 0.6,
    "batch_size_remedies": 0.6,
    "running_stats": 1.0,
    "lr_sweep": 0.6,
    "serving": 1.0,
    "accumulation": 1.0,
    "finetune": 1.0,
    "conv": 1.0,
}
MIN_FONT_PT = 7

STYLE = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.linewidth": 0.6,
    "lines.linewidth": 1.2,
    "lines.markersize": 4,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "legend.handlelength": 2.8,  # long enough to show each normaliser's line style
    "figure.dpi": 150,
    "savefig.dpi": 200,
    "pdf.fonttype": 42,
    "svg.hashsalt": "bnstudy",
    "path.simplify": False,
}

# One colour, marker and line style per normaliser, the same in every figure
# (bnstudy.nets.normalisers, Okabe-Ito palette).
COLOURS = normalisers.colours()
LABELS = normalisers.labels()
MARKERS = normalisers.markers()
LINESTYLES = normalisers.linestyles()
OTHER = normalisers.OTHER_COLOURS
# Every other colour, each with one meaning in every figure (none is a normaliser's).
MEANING = {
    "published": OTHER["grey"],  # a value of the published study
    "moving average": OTHER["highlight"],  # running statistics by the moving average (study 3)
    "pooled": OTHER["contrast"],  # pooled (population) statistics (study 3)
    "one batch": OTHER["dark grey"],  # one batch's own statistics (study 3)
}
# Markers that are no normaliser's (tests/test_figures.py checks the registry):
# for estimators (study 2) and probe designs (study 1).
FREE_MARKERS = ("*", "X", "h", ">")
PUBLISHED_MARKER = "+"  # in the colour of published values


def width(name: str) -> float:
    """The printed width of figure ``name`` in inches."""
    return PRINTED_WIDTH[name] * LINEWIDTH


def new(width: float = 3.3, height: float = 2.3, **kwargs):
    plt.rcParams.update(STYLE)
    return plt.subplots(figsize=(width, height), layout="constrained", **kwargs)


def blank(width: float, height: float):
    """An empty figure in the house style (for figures laid out on a grid)."""
    plt.rcParams.update(STYLE)
    return plt.figure(figsize=(width, height), layout="constrained")


def shade(colour: str, i: int, n: int) -> tuple:
    """The ``i``-th of ``n`` shades of ``colour``, lightest first: from the colour
    mixed with 60% white to the colour mixed with 30% black (the colour itself
    when ``n`` is 1)."""
    rgb = np.asarray(mcolors.to_rgb(colour))
    s = -0.6 + 0.9 * i / (n - 1) if n > 1 else 0.0
    return tuple(rgb + (1 - rgb) * -s if s < 0 else rgb * (1 - s))


# An ordered quantity drawn in one axes (study 1's training batch sizes): viridis, colour-blind
# safe and ordered by lightness, cut before its pale yellow end.
SEQUENCE = "viridis"
SEQUENCE_END = 0.8


def sequence(i: int, n: int) -> str:
    """The ``i``-th of ``n`` colours of :data:`SEQUENCE`, darkest first (hex)."""
    at = SEQUENCE_END * i / (n - 1) if n > 1 else 0.0
    return mcolors.to_hex(matplotlib.colormaps[SEQUENCE](at))


def log2_axis(ax, ticks) -> None:
    """A base-2 log axis with a tick at each of ``ticks`` (batch sizes), labelled plainly."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ticks))
    ax.set_xticklabels([f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())


def save(fig, *paths) -> None:
    """Write ``fig`` to each path (.pdf or .png) with no dates or software stamps."""
    for path in map(str, paths):
        fmt = path.rsplit(".", 1)[-1]
        metadata = {
            "pdf": {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
            "png": {"Software": None},
        }.get(fmt, {})
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, metadata=metadata)
    plt.close(fig)


# ---- Study 2 ------------------------------------------------------------------------

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
REFERENCE = "reference"  # gid of a line that is a reference (zero, a start value), not a series


def reference_line(ax, y, **style) -> None:
    """A horizontal reference line (no series: the figure test does not ask a legend entry for it)."""
    ax.axhline(y, **({"color": OTHER["grey"], "lw": 0.6, "ls": "-", "zorder": 0.5} | style), gid=REFERENCE)


def _band(ax, g, colour, alpha=0.15):
    ax.fill_between(g["batch_size"], g["ci_low"], g["ci_high"], color=colour, alpha=alpha, lw=0)


def dodge(i: int, n: int, step: float = 1.07) -> float:
    """The factor that sets the ``i``-th of ``n`` series at one x apart on a log axis (centred)."""
    return step ** (i - (n - 1) / 2)


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
    training mode (hollow markers, thin line) (top); below, each paired comparison of two
    normalisers in ``gains`` (``A_vs_B``: mean of the per-seed differences A - B in points,
    with its paired interval), in the style of A."""
    pairs = normaliser_pairs(gains) if gains is not None else []
    if pairs:
        fig, (ax, bx) = new(width, height, nrows=2, sharex=True, height_ratios=[3, 2])
    else:
        fig, ax = new(width, height * 0.65)
    kinds = [n for n in normalisers.NAMES if n in set(summary["normaliser"])]
    for norm in kinds:
        modes = ("inference", "training") if norm in normalisers.BATCH_NAMES else ("inference",)
        for mode in modes:
            g = summary[(summary["normaliser"] == norm) & (summary["mode"] == mode)].sort_values("batch_size")
            train = mode == "training"
            ax.plot(
                g["batch_size"],
                g["mean"],
                linestyle=LINESTYLES[norm],
                marker=MARKERS[norm],
                lw=0.8 if train else 1.3,
                mfc="white" if train else COLOURS[norm],
                color=COLOURS[norm],
                label=LABELS[norm] + (", training mode" if train else ""),
            )
            _band(ax, g, COLOURS[norm])
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
    fig.legend(
        *ax.get_legend_handles_labels(),
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


# ---- checks (tests/test_figures.py) --------------------------------------------------


def _named(artist) -> str:
    text = artist.get_text() if hasattr(artist, "get_text") else ""
    return f"{type(artist).__name__}({text!r})" if text else type(artist).__name__


def outside(fig, tolerance: float = 0.5) -> list[str]:
    """Every visible artist of ``fig`` (axes with their labels and ticks, texts,
    legends with their markers) whose drawn extent leaves the figure; empty when
    all lie inside. Draws the figure first, as saving does."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    found = []
    artists = list(fig.legends) + list(fig.texts)
    for ax in fig.axes:
        artists += [ax, ax.xaxis, ax.yaxis, ax.xaxis.label, ax.yaxis.label, ax.title, *ax.texts]
        if ax.get_legend():
            artists.append(ax.get_legend())
    for legend in [a for a in artists if isinstance(a, matplotlib.legend.Legend)]:
        artists += list(legend.legend_handles) + list(legend.get_texts())
    for artist in artists:
        if artist is None or not artist.get_visible() or (hasattr(artist, "get_text") and not artist.get_text()):
            continue
        ext = artist.get_tightbbox(renderer) if hasattr(artist, "get_tightbbox") else None
        ext = ext if ext is not None else artist.get_window_extent(renderer)
        if ext.width == 0 and ext.height == 0:
            continue
        if (
            ext.x0 < box.x0 - tolerance
            or ext.y0 < box.y0 - tolerance
            or ext.x1 > box.x1 + tolerance
            or ext.y1 > box.y1 + tolerance
        ):
            found.append(f"{_named(artist)} at {tuple(round(v) for v in ext.extents)} outside {tuple(box.extents)}")
    return found


def font_sizes(fig) -> list[tuple[float, str]]:
    """Every visible text of ``fig`` with its font size in points, as ``(size, text)``."""
    fig.canvas.draw()
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    return sorted((t.get_fontsize(), t.get_text()) for t in texts)
