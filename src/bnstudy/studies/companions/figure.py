"""Study 1's figure: how often a test example's label flips with its companions.

Laid out from the data and the registry of normalisers, so no normaliser is
dropped: the dependence networks (top left), the flip rate at the smallest probe
batch of every normaliser of the grid (top right: the normalisers without batch
statistics are marked where all their flip rates are exactly zero), and one panel
per normaliser of the grid that uses batch statistics (bottom row).
"""

from __future__ import annotations

import pandas as pd
from matplotlib import patheffects
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, NullLocator, PercentFormatter

from bnstudy.base import normalisers
from bnstudy.paper import figures

# probe designs other than random companions: label, marker (no normaliser's), x offset at its b
DESIGNS = {
    "exact": ("every companion (exact)", figures.FREE_MARKERS[0], 1.0),
    "own_class": ("one class: own", figures.FREE_MARKERS[1], 1.0),
    "other_class": ("one class: another", figures.FREE_MARKERS[2], 0.86),
    "any_class": ("one class: any", figures.FREE_MARKERS[3], 1.16),
}
LINEAR_TO = 0.01  # the summary panel's axis is linear up to this flip rate, logarithmic above
ROW_HEIGHT = (2.3, 2.0)  # inches: dependence networks and summary; grid panels
LEGEND_HEIGHT = 0.75


def layout(grid: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Normalisers of the grid in registry order: all of them (summary panel) and
    those that use batch statistics (one panel each). Unknown names raise."""
    present = set(grid["normaliser"])
    for name in present:
        normalisers.get(name)
    kinds = [n for n in normalisers.NAMES if n in present]
    return kinds, [n for n in kinds if n in normalisers.BATCH_NAMES]


def all_zero(grid: pd.DataFrame) -> list[str]:
    """Normalisers whose flip rate is exactly zero in every cell (design, probe size,
    training size, and in every seed: the cell's maximum is the mean when all are 0)."""
    flips = grid[grid["measure"] == "flip_rate"]
    top = flips.assign(top=flips[["mean", "ci_high"]].max(axis=1)).groupby("normaliser")["top"].max()
    return [n for n in normalisers.NAMES if n in top.index and top[n] == 0]


def _design_points(ax, rows, colour, value, low=None, high=None, hollow=False, ms=5, series=""):
    """One probe design's points each; ``series``: a name the points share with other calls'
    (the other networks' points are one series each design, drawn network by network)."""
    for design, (_, marker, dodge) in DESIGNS.items():
        o = rows[rows["design"] == design]
        if o.empty:
            continue
        kw = dict(ls="none", marker=marker, ms=ms, color=colour, mfc="white" if hollow else colour, mew=0.8)
        if series:
            kw["label"] = f"_{series}, {design}"  # hidden from automatic legends
        if low is None:
            ax.plot(o["batch_size"] * dodge, o[value], **kw)
        else:
            err = [o[value] - o[low], o[high] - o[value]]
            ax.errorbar(o["batch_size"] * dodge, o[value], yerr=err, capsize=2, elinewidth=0.8, **kw)


def _dependence(ax, dep, published, bn):
    colour, style = figures.COLOURS[bn], dict(ls=figures.LINESTYLES[bn], marker=figures.MARKERS[bn])
    first = dep["seed"].min()
    for seed, rows in dep.groupby("seed"):
        r = rows[rows["design"] == "random"].sort_values("batch_size")
        if seed == first:
            continue
        kw = dict(lw=0.7, ms=3, alpha=0.7, color=colour, mfc="white", label="_other networks")
        ax.plot(r["batch_size"], r["flip_rate"], **kw, **style)
        _design_points(ax, rows, colour, "flip_rate", hollow=True, ms=3.5, series="other networks")
    rows = dep[dep["seed"] == first]
    r = rows[rows["design"] == "random"].sort_values("batch_size")
    ax.plot(r["batch_size"], r["flip_rate"], lw=1.6, ms=4, color=colour, **style)
    ax.fill_between(r["batch_size"], r["flip_rate_ci_low"], r["flip_rate_ci_high"], color=colour, alpha=0.2, lw=0)
    _design_points(ax, rows, colour, "flip_rate", "flip_rate_ci_low", "flip_rate_ci_high")
    pub = sorted((published or {}).get("flip_rate", {}).items())
    points = [(b, v) for b, v in pub]
    same = (published or {}).get("one_class_same_label_b16")
    if same is not None:  # the published one-class design, its class not stated: beside ours from any class
        one = dep.loc[dep["design"] == "any_class", "batch_size"]
        b = one.iloc[0] if len(one) else 16  # the published figure's one-class batch size
        points.append((b * DESIGNS["any_class"][2], 1 - same))
    _published(ax, points)
    ax.set_title(f"{dep['seed'].nunique()} dependence networks ({figures.LABELS[bn]})")


PUBLISHED = dict(ls="none", marker=figures.PUBLISHED_MARKER, ms=8, mew=1.6, color=figures.MEANING["published"])
HALO = [patheffects.withStroke(linewidth=3.2, foreground="white")]  # keeps a marker legible over lines


def _published(ax, points):
    """The published values on top of everything, each labelled."""
    if not points:
        return
    ax.plot([b for b, _ in points], [v for _, v in points], zorder=10, path_effects=HALO, **PUBLISHED)
    last = max(b for b, _ in points)
    for b, v in points:
        ax.annotate(
            "publ.",
            (b, v),
            xytext=(-5, 3) if b == last else (5, 3),  # inside the axes
            ha="right" if b == last else "left",
            textcoords="offset points",
            size=7,
            color=figures.MEANING["published"],
            zorder=10,
            path_effects=HALO,
        )


def _summary(ax, grid, kinds, sizes, zero):
    """Flip rate at the smallest probe batch, one point per training batch size (a line spans them)."""
    b = min(grid.loc[grid["design"] == "random", "batch_size"])
    rows = grid[(grid["measure"] == "flip_rate") & (grid["design"] == "random") & (grid["batch_size"] == b)]
    for y, norm in enumerate(kinds):
        v = rows.loc[(rows["normaliser"] == norm) & rows["train_batch_size"].isin(sizes), "mean"]
        colour = figures.COLOURS[norm]
        ax.plot([v.min(), v.max()], [y, y], lw=0.8, ls=figures.LINESTYLES[norm], color=colour)
        ax.plot(v, [y] * len(v), ls="none", marker=figures.MARKERS[norm], ms=4.5, color=colour, mfc="white", mew=0.9)
        if norm in zero:
            ax.annotate("0 in every cell", (0, y), xytext=(8, 0), textcoords="offset points", va="center", size=7)
    ax.set_yticks(range(len(kinds)), [figures.LABELS[n] for n in kinds])
    ax.set_ylim(len(kinds) - 0.5, -0.5)
    # linear to 1%, logarithmic above: rates of a few percent are not crushed beside tens of percent
    ax.set_xscale("symlog", linthresh=LINEAR_TO, linscale=0.6)
    ax.set_xlim(-LINEAR_TO / 10, 1.0)
    ax.xaxis.set_major_locator(FixedLocator([0, 0.01, 0.1, 1.0]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_xlabel("flip rate (random)")
    ax.set_title(f"every normaliser, $b={b:g}$")


def _grid_panel(ax, grid, norm, sizes):
    flips = grid[(grid["measure"] == "flip_rate") & (grid["normaliser"] == norm)]
    style = dict(ls=figures.LINESTYLES[norm], marker=figures.MARKERS[norm], ms=3)
    for i, tb in enumerate(sizes):
        colour = figures.sequence(i, len(sizes))
        c = flips[flips["train_batch_size"] == tb]
        r = c[c["design"] == "random"].sort_values("batch_size")
        ax.plot(r["batch_size"], r["mean"], lw=1.0, color=colour, **style)
        _design_points(ax, c, colour, "mean", ms=4)
    ax.set_title(f"grid: {figures.LABELS[norm]}")
    ax.set_ylim(bottom=0)


def _legend(fig, sizes, dep_networks, first, bn, exact_companions=None):
    """Keys in the dependence networks' normaliser's colour; the grid panels' training
    batch sizes as colour keys (each grid panel draws its normaliser's marker and line style)."""
    colour = figures.COLOURS[bn]
    style = dict(ls=figures.LINESTYLES[bn], marker=figures.MARKERS[bn], color=colour)
    handles = [Line2D([], [], lw=1.6, ms=4, **style)]
    labels = [f"random, seed-{first:g} network"]
    if dep_networks > 1:
        handles.append(Line2D([], [], lw=0.7, ms=3, alpha=0.7, mfc="white", **style))
        labels.append("random, other networks")
    for design, (label, marker, _) in DESIGNS.items():
        handles.append(Line2D([], [], ls="none", marker=marker, ms=5, color=colour))
        if design == "exact" and exact_companions is not None:
            label = f"every one of {exact_companions:,} sampled companions (exact)"
        labels.append(label)
    handles.append(Line2D([], [], **PUBLISHED))
    labels.append("published")
    for i, tb in enumerate(sizes):
        handles.append(Patch(color=figures.sequence(i, len(sizes))))
        labels.append(f"grid, trained at {tb:g}")
    fig.legend(handles, labels, loc="outside lower center", ncol=4, frameon=False, handlelength=2.4, columnspacing=1.2)


def companions(
    summary: pd.DataFrame,
    grid: pd.DataFrame,
    published: dict | None,
    width: float | None = None,
    exact_companions: int | None = None,
):
    """Study 1's figure from ``summary.csv`` (per network), ``grid_over_seeds.csv``
    (mean over seeds) and the published anchors; returns the figure. ``exact_companions``: the
    exact design's sample of companions, where the config draws one (its legend says so)."""
    width = figures.width("companions") if width is None else width
    kinds, batch = layout(grid)
    grid = grid[grid["measure"] == "flip_rate"]
    dep = summary[summary["network"] == "dependence"]
    bn = dep["normaliser"].iloc[0] if "normaliser" in dep and len(dep) else "batchnorm"
    sizes = sorted(grid["train_batch_size"].unique())
    probe = sorted(set(dep.loc[dep["design"] == "random", "batch_size"]) | set(grid["batch_size"]))
    fig = figures.blank(width, sum(ROW_HEIGHT) + LEGEND_HEIGHT)
    n = max(len(batch), 1)
    # each row its own grid: the summary panel's long tick labels then widen no bottom panel's margin
    rows = fig.add_gridspec(2, 1, height_ratios=ROW_HEIGHT)
    top, bottom = rows[0].subgridspec(1, 3 * n), rows[1].subgridspec(1, 3 * n)
    spec = {0: top, 1: bottom}
    ax = fig.add_subplot(spec[0][0, : 2 * n])
    _dependence(ax, dep, published, bn)
    _summary(fig.add_subplot(spec[0][0, 2 * n :]), grid, kinds, sizes, all_zero(grid))
    panels = [ax]
    for i, norm in enumerate(batch):
        bx = fig.add_subplot(spec[1][0, 3 * i : 3 * i + 3], sharey=ax if norm == bn else None)
        _grid_panel(bx, grid, norm, sizes)
        panels.append(bx)
    for p in panels:
        figures.log2_axis(p, probe)
        p.set_xlabel("probe batch size $b$")
        p.yaxis.set_major_formatter(PercentFormatter(1.0))
        p.set_ylabel("flip rate")
    ax.set_ylim(0, 1)
    _legend(fig, sizes, dep["seed"].nunique(), dep["seed"].min(), bn, exact_companions)
    return fig
