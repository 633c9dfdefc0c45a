"""Every series a figure draws is named, and no two series of one axes look alike.

Each figure the pipeline makes is built by its package function on the small inputs of
tests/paper/test_figures.py. A *series* is a visible line of an axes holding data (error-bar
caps and reference lines, :data:`bnstudy.paper.figures.REFERENCE`, aside); lines sharing a
label are one series drawn in parts (``"_other networks"``), any other line is its own.
A series is *named* when a legend of its axes or of the figure has an entry that draws
its colour and shows nothing else than its marker and line style (a colour key, a
marker key and a full key all qualify), or when the axis labels it directly (all its
points at one labelled y tick: study 1's summary panel). Two series of one axes must
differ in colour, marker (hollow and filled counting as two) or line style. Bands are
not series: each takes the colour of a series of its axes.
"""

from __future__ import annotations

import matplotlib.colors as mcolors
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.lines import Line2D
from matplotlib.offsetbox import DrawingArea, OffsetBox
from matplotlib.patches import Patch

from bnstudy.paper import figures
from test_figures import build

NO_MARKER = (None, "None", "none", "", " ", ",")
CAPS = ("_", "|")  # error-bar caps


def colour(c) -> tuple:
    return tuple(round(v, 3) for v in mcolors.to_rgb(c))


def dash(line) -> object:
    """The line style as drawn before scaling by the width, or None for no line."""
    if line.get_linestyle() in ("None", "none", "", " "):
        return None
    return line.get_linestyle(), line._unscaled_dash_pattern


def marker(line) -> str | None:
    return None if line.get_marker() in NO_MARKER else str(line.get_marker())


def hollow(line) -> bool:
    face = line.get_markerfacecolor()
    return isinstance(face, str) and face.lower() in ("white", "none") or colour(face) == (1.0, 1.0, 1.0)


def series(ax) -> dict[str, list[Line2D]]:
    """The axes' series, ``{name: its lines}``."""
    out: dict[str, list[Line2D]] = {}
    for line in ax.get_lines():
        if not line.get_visible() or line.get_gid() == figures.REFERENCE or len(line.get_xdata()) == 0:
            continue
        if dash(line) is None and line.get_marker() in CAPS:
            continue
        label = str(line.get_label())
        name = f"{id(line)}" if label.startswith("_child") or label.startswith("_nolegend") else label
        out.setdefault(name, []).append(line)
    return out


def style(line) -> tuple:
    return colour(line.get_color()), marker(line), hollow(line) if marker(line) else False, dash(line)


def _areas(box):
    if isinstance(box, DrawingArea):
        yield box
    elif isinstance(box, OffsetBox):
        for child in box.get_children():
            yield from _areas(child)


def entries(legend) -> list[tuple]:
    """``(colour, marker or None, line style or None)`` drawn by each entry of ``legend``."""
    out = []
    for area in _areas(legend._legend_handle_box):  # the drawn keys, one area per entry
        parts = area.get_children()
        lines = [a for a in parts if isinstance(a, Line2D) and a.get_marker() not in CAPS]
        patches = [a for a in parts if isinstance(a, Patch)]
        if lines:
            c = colour(lines[0].get_color())
            m = next((marker(a) for a in lines if marker(a)), None)
            d = next((dash(a) for a in lines if dash(a) is not None), None)
            out.append((c, m, d))
        elif patches:
            out.append((colour(patches[0].get_facecolor()), None, None))
    return out


def named(line, keys, ax) -> bool:
    c, m, _, d = style(line)
    for kc, km, kd in keys:
        if kc == c and km in (None, m) and kd in (None, d):
            return True
    # labelled directly by the y axis: every point at one tick with a label
    ticks = {t.get_loc(): t.label1.get_text() for t in ax.yaxis.get_major_ticks()}
    ys = {float(y) for y in line.get_ydata()}
    return len(ys) == 1 and bool(ticks.get(ys.pop(), "").strip())


def problems(fig) -> list[str]:
    fig.canvas.draw()
    figure_keys = [k for legend in fig.legends for k in entries(legend)]
    found = []
    for i, ax in enumerate(fig.axes):
        keys = figure_keys + (entries(ax.get_legend()) if ax.get_legend() else [])
        drawn = series(ax)
        where = f"axes {i} ({ax.get_title() or ax.get_ylabel()!r})"
        for name, lines in drawn.items():
            if not named(lines[0], keys, ax):
                found.append(f"{where}: series {name!r} {style(lines[0])} has no legend entry")
        seen: dict[tuple, str] = {}
        for name, lines in drawn.items():
            for s in {style(line) for line in lines}:
                if s in seen and seen[s] != name:
                    found.append(f"{where}: series {seen[s]!r} and {name!r} share colour, marker and line style {s}")
                seen[s] = name
        colours = {style(line)[0] for lines in drawn.values() for line in lines}
        for band in (c for c in ax.collections if isinstance(c, PolyCollection) and c.get_visible()):
            faces = band.get_facecolor()
            if len(faces) and colour(faces[0]) not in colours:
                found.append(f"{where}: a band in {colour(faces[0])}, the colour of no series")
    return found


@pytest.mark.parametrize("name", sorted(figures.PRINTED_WIDTH))
def test_every_series_is_named_and_told_apart(name):
    fig = build(name)
    try:
        assert problems(fig) == [], name
    finally:
        figures.plt.close(fig)


def test_a_series_without_a_key_is_found():
    fig, ax = figures.new(3, 2)
    ax.plot([1, 2], [1, 2], color="C0", marker="o", label="kept")
    ax.plot([1, 2], [2, 1], color="C1", marker="s")  # no key
    ax.legend(handles=ax.get_lines()[:1])
    found = problems(fig)
    assert len(found) == 1 and "no legend entry" in found[0], found
    figures.plt.close(fig)


def test_two_series_alike_are_found_and_fill_tells_them_apart():
    fig, ax = figures.new(3, 2)
    ax.plot([1, 2], [1, 2], color="C0", marker="o", ls="--", label="a")
    ax.plot([1, 2], [2, 1], color="C0", marker="o", ls="--", label="b")
    ax.legend()
    assert any("share colour, marker and line style" in f for f in problems(fig))
    ax.get_lines()[1].set_markerfacecolor("white")
    assert problems(fig) == []
    figures.plt.close(fig)


def test_a_key_with_another_marker_or_line_style_does_not_name_a_series():
    fig, ax = figures.new(3, 2)
    ax.plot([1, 2], [1, 2], color="C0", marker="o", ls="-")
    ax.legend(handles=[Line2D([], [], color="C0", marker="s", ls="-")], labels=["other marker"])
    assert problems(fig), "a square key named a circle series"
    ax.get_legend().remove()
    ax.legend(handles=[Patch(color="C0")], labels=["colour key"])
    assert problems(fig) == []
    figures.plt.close(fig)


def test_a_band_in_no_series_colour_is_found():
    fig, ax = figures.new(3, 2)
    ax.plot([1, 2], [1, 2], color="C0", label="a")
    ax.fill_between([1, 2], [0, 1], [2, 3], color="C3", alpha=0.2)
    ax.legend()
    assert any("band" in f for f in problems(fig))
    figures.plt.close(fig)
