"""Byte-stable matplotlib figures in one house style, drawn at their printed size.

Every figure is made at the width it is printed at in the paper (``\\linewidth``
of an A4 article with the paper's margins, or a fraction of it:
:data:`PRINTED_WIDTH`), so a font size here is the size on paper; none is below
:data:`MIN_FONT_PT`. Each normaliser is drawn in its registry colour, marker and
line style (:mod:`bnstudy.base.normalisers`), the same in every figure; the other
colours (:data:`MEANING`) each mean one thing in every figure.

This module holds the style and saving; each study's figure is in its own folder
(:mod:`bnstudy.studies.batch_size.figure`, :mod:`bnstudy.studies.companions.figure`, ...).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from bnstudy.base import normalisers  # noqa: E402
from bnstudy.base.catalogue import printed_widths  # noqa: E402
from bnstudy.base.io import atomic_path  # noqa: E402

# paper/main.tex: \documentclass[a4paper]{article} with \usepackage[margin=2.2cm]{geometry}
PAGE_WIDTH_CM, MARGIN_CM = 21.0, 2.2
LINEWIDTH = (PAGE_WIDTH_CM - 2 * MARGIN_CM) / 2.54  # inches
# width of each figure in the paper, as a fraction of \linewidth (its \includegraphics):
# each study lists its figures' widths in bnstudy.base.catalogue
PRINTED_WIDTH = printed_widths()
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
# (bnstudy.base.normalisers, Okabe-Ito palette).
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
# Markers that are no normaliser's (tests/paper/test_figures.py checks the registry):
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


def shade(colour: str, i: int, n: int, light: float = 0.6, dark: float = 0.3) -> tuple:
    """The ``i``-th of ``n`` shades of ``colour``, lightest first: from the colour
    mixed with ``light`` (60%) white to the colour mixed with ``dark`` (30%) black (the
    colour itself when ``n`` is 1)."""
    rgb = np.asarray(mcolors.to_rgb(colour))
    s = -light + (light + dark) * i / (n - 1) if n > 1 else 0.0
    return tuple(rgb + (1 - rgb) * -s if s < 0 else rgb * (1 - s))


# Series of one colour told apart by an ordered quantity (a training batch size) or by one factor
# of a design (a batch stream): besides the shade, a marker and a line style each, so that the
# figure reads in greyscale too (tests/paper/test_greyscale.py). No series' shade is paler than the
# colour mixed with SERIES_LIGHT white, so that the lightest line still shows in grey on white.
SERIES_LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P")
SERIES_LIGHT, SERIES_DARK = 0.45, 0.35


def series(i: int, n: int, colour: str) -> dict:
    """The ``i``-th of ``n`` series drawn in shades of ``colour`` (lightest first), as
    ``Line2D`` keywords: ``color`` (its shade), ``marker`` and ``ls``. No two of up to 36
    series share a marker and a line style: the markers repeat after six, and each round of six
    takes the line styles one further."""
    k = len(SERIES_MARKERS)
    return {
        "color": shade(colour, i, n, SERIES_LIGHT, SERIES_DARK),
        "marker": SERIES_MARKERS[i % k],
        "ls": SERIES_LINESTYLES[(i + i // k) % len(SERIES_LINESTYLES)],
    }


def staggered(i: int, n: int, points: int, marks: int = 6) -> tuple[int, int]:
    """``markevery`` for the ``i``-th of ``n`` series of ``points`` points each: about ``marks``
    markers, each series' set between the others' (series drawn over one another still show
    every marker), or every point marked when there are at most ``2 * marks`` points."""
    step = max(1, points // marks)
    return (i * step // n, step)


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


# ---- shared by the studies' figures -----------------------------------------------

REFERENCE = "reference"  # gid of a line that is a reference (zero, a start value), not a series


def reference_line(ax, y, **style) -> None:
    """A horizontal reference line (no series: the figure test does not ask a legend entry for it)."""
    ax.axhline(y, **({"color": OTHER["grey"], "lw": 0.6, "ls": "-", "zorder": 0.5} | style), gid=REFERENCE)


def dodge(i: int, n: int, step: float = 1.07) -> float:
    """The factor that sets the ``i``-th of ``n`` series at one x apart on a log axis (centred)."""
    return step ** (i - (n - 1) / 2)


def spread(i: int, n: int, octaves: float = 0.6) -> float:
    """The factor that sets the ``i``-th of ``n`` series at one x apart on a base-2 log axis, the
    ``n`` evenly over ``octaves`` centred on the x (below one octave, each series stays nearer its
    own batch size's tick than any other's): markers of curves that lie on one another all show."""
    return 2 ** (octaves * (i / (n - 1) - 0.5)) if n > 1 else 1.0


# ---- checks (tests/paper/test_figures.py) --------------------------------------------------


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
