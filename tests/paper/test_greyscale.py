"""Figures that read in greyscale: series are told apart by more than a shade of one colour.

The figures that draw one normaliser's series in shades of its colour (the serving, fine-tuning
and PreciseBN-on-a-budget figures: one series per training batch size or per batch stream)
give every series a marker and a line style of its own (:func:`bnstudy.paper.figures.series`),
so no two series of a figure share a (marker, line style) pair. The batch-size figure's curves
lie on one another (the normalisers without batch statistics score alike), so its series are
set apart sideways: no two series of an axes put a point at one x, each point stays nearer its
own batch size than any other, and the ticks stay at the batch sizes. Each figure is built by
its package function on the small inputs of tests/paper/test_figures.py.
"""

from __future__ import annotations

import matplotlib.colors as mcolors
import numpy as np
import pytest

from bnstudy.paper import figures
from test_figure_legends import dash, marker, series
from test_figures import build

SHADED = ("serving", "finetune", "precise_rows")


def drawn_series(fig) -> dict[str, set]:
    """``{series: its (marker, line style) pairs}`` over every axes of ``fig`` (a series drawn in
    several panels, under one label, is one series)."""
    out: dict[str, set] = {}
    for ax in fig.axes:
        for name, lines in series(ax).items():
            out.setdefault(name, set()).update((marker(line), str(dash(line))) for line in lines)
    return out


@pytest.mark.parametrize("name", SHADED)
def test_no_two_series_share_a_marker_and_line_style(name):
    fig = build(name)
    try:
        found = drawn_series(fig)
        assert len(found) >= 3, (name, found)
        owner: dict[tuple, str] = {}
        for label, pairs in found.items():
            assert len(pairs) == 1, f"{name}: series {label!r} drawn in several styles {pairs}"
            pair = next(iter(pairs))
            assert pair not in owner, f"{name}: {owner.get(pair)!r} and {label!r} share marker and line style {pair}"
            owner[pair] = label
        # every series but the reference (the starting or the before-stream value) has a marker
        marked = [label for label, pairs in found.items() if next(iter(pairs))[0] is not None]
        assert len(marked) >= len(found) - 1, (name, found)
    finally:
        figures.plt.close(fig)


def test_serving_lines_show_their_markers_apart():
    """Lines lying on one another (the class-sorted stream) still show each line's markers."""
    fig = build("serving")
    try:
        for ax in fig.axes:
            at: dict[float, str] = {}
            for label, lines in series(ax).items():
                line = lines[0]
                if marker(line) is None:
                    continue
                every = line.get_markevery()
                xs = np.asarray(line.get_xdata())[slice(every[0], None, every[1])]
                for x in xs:
                    assert x not in at, f"{label!r} and {at[x]!r} both mark x={x}"
                    at[x] = label
    finally:
        figures.plt.close(fig)


def test_batch_size_figure_sets_every_series_apart_at_each_batch_size():
    fig = build("batch_size")
    try:
        sizes = [float(t) for t in fig.axes[-1].get_xticks()]
        assert sizes == [2, 4, 8, 16, 32, 64], "the ticks stay at the training batch sizes"
        for i, ax in enumerate(fig.axes):
            xs = {}
            for label, lines in series(ax).items():
                found = {float(x) for line in lines for x in line.get_xdata()}
                xs[label] = found
            assert len(xs) >= 2, f"axes {i}: {sorted(xs)}"
            seen: dict[float, str] = {}
            for label, found in xs.items():
                assert len(found) == len(sizes), f"axes {i}: {label!r} at {sorted(found)}"
                for x in found:
                    assert x not in seen, f"axes {i}: {label!r} and {seen[x]!r} both at x={x}"
                    seen[x] = label
                    nearest = min(sizes, key=lambda b: abs(np.log2(x / b)))
                    assert abs(np.log2(x / nearest)) < 0.5, f"{label!r}: x={x} nearer another batch size"
            top = sorted(xs)  # the top panel: every normaliser (and mode) the summary holds
            if i == 0:
                assert len(top) >= 8, top
    finally:
        figures.plt.close(fig)


def lightness(colour) -> float:
    r, g, b = mcolors.to_rgb(colour)
    return 0.299 * r + 0.587 * g + 0.114 * b


@pytest.mark.parametrize("n", [1, 2, 3, 6, 7, 36])
def test_series_styles_are_distinct_and_shaded_darker_along(n):
    colour = figures.COLOURS["batchnorm"]
    styles = [figures.series(i, n, colour) for i in range(n)]
    pairs = {(s["marker"], str(s["ls"])) for s in styles}
    assert len(pairs) == n, "two series share a marker and a line style"
    grey = [lightness(s["color"]) for s in styles]
    assert grey == sorted(grey, reverse=True), "shades go from light to dark"
    assert all(g < 0.8 for g in grey), "a shade too pale to show on white"


def test_staggered_markers_fall_between_the_others():
    marks = [figures.staggered(i, 3, 56) for i in range(3)]
    shown = [set(range(56)[slice(start, None, step)]) for start, step in marks]
    assert all(len(s) >= 6 for s in shown)
    assert not shown[0] & shown[1] and not shown[1] & shown[2] and not shown[0] & shown[2]
    assert figures.staggered(1, 4, 4) == (0, 1), "few points: every point marked"


@pytest.mark.parametrize("name", (*SHADED, "batch_size"))
def test_saved_twice_to_the_same_bytes(name, tmp_path):
    for i in range(2):
        figures.save(build(name), tmp_path / f"{i}.pdf", tmp_path / f"{i}.png")
    for ext in ("pdf", "png"):
        assert (tmp_path / f"0.{ext}").read_bytes() == (tmp_path / f"1.{ext}").read_bytes(), (name, ext)
