"""Rule figure_companions: flip rate against probe batch size, random versus one-class companions."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import logging

logging.getLogger("fontTools").setLevel(logging.WARNING)  # font subsetting chatter
import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import yaml

from bnstudy import figures, io

inp = snakemake.input
summary = io.read_table(inp.summary_table)
grid = io.read_table(inp.grid_table)
published = yaml.safe_load(open(inp.published))["companions"]
dep = summary[summary["network"] == "dependence"]
dep = dep[dep["seed"] == dep["seed"].min()]  # the first dependence network, the published one's counterpart
grid = grid[grid["measure"] == "flip_rate"]
normalisers = [n for n in figures.COLOURS if n in set(grid["normaliser"])]
sizes = sorted(dep.loc[dep["design"] == "random", "batch_size"].unique())
one_class = {"own_class": ("^", "own class"), "other_class": ("s", "another class")}

# The dependence network's panel, then one per normaliser of the grid, three to a row.
NCOLS = 3
panels = 1 + len(normalisers)
nrows = -(-panels // NCOLS)
fig, axes = figures.new(7.0, 2.4 * nrows, nrows=nrows, ncols=NCOLS, sharex=True, sharey=True, squeeze=False)
axes = axes.ravel()

# Panel 1: the dependence network, with bootstrap intervals over examples.
ax = axes[0]
r = dep[dep["design"] == "random"].sort_values("batch_size")
ax.plot(r["batch_size"], r["flip_rate"], "-o", ms=3, color=figures.COLOURS["batchnorm"], label="random companions")
ax.fill_between(
    r["batch_size"], r["flip_rate_ci_low"], r["flip_rate_ci_high"], color=figures.COLOURS["batchnorm"], alpha=0.2, lw=0
)
exact = dep[dep["design"] == "exact"]
if len(exact):
    ax.plot(exact["batch_size"], exact["flip_rate"], "D", ms=4, mfc="none", color="black", label="every companion")
for design, (marker, label) in one_class.items():
    o = dep[dep["design"] == design]
    ax.errorbar(
        o["batch_size"],
        o["flip_rate"],
        yerr=[o["flip_rate"] - o["flip_rate_ci_low"], o["flip_rate_ci_high"] - o["flip_rate"]],
        fmt=marker,
        ms=4,
        color="black",
        mfc="white" if design == "own_class" else "black",
        capsize=2,
        lw=0.8,
        label=f"one class: {label}",
    )
pub = sorted(published["flip_rate"].items())
ax.plot([b for b, _ in pub], [v for _, v in pub], "x", ms=5, color="grey", label="published")
ax.set_title("dependence network (SGD, batch norm)")
handles, labels = ax.get_legend_handles_labels()

# One panel per normaliser of the grid: one line per training batch size (mean over seeds).
train_sizes = sorted(grid["train_batch_size"].unique())


def shaded(colour, i):
    """Lighter for smaller training batches, the normaliser's own colour for the largest."""
    shade = 0.3 + 0.7 * (i + 1) / len(train_sizes)
    return tuple(1 - shade * (1 - np.array(mcolors.to_rgb(colour))))


for i, tb in enumerate(train_sizes):  # legend entries in grey: the shading means the same in every panel
    handles.append(plt.Line2D([], [], marker="o", ms=2.5, lw=1, color=shaded("black", i)))
    labels.append(f"grid, trained at {tb}")
for ax, norm in zip(axes[1:], normalisers):
    g = grid[grid["normaliser"] == norm]
    for i, tb in enumerate(train_sizes):
        colour = shaded(figures.COLOURS[norm], i)
        c = g[g["train_batch_size"] == tb]
        rnd = c[c["design"] == "random"].sort_values("batch_size")
        ax.plot(rnd["batch_size"], rnd["mean"], "-o", ms=2.5, lw=1, color=colour, label=f"trained at {tb}")
        for design, (marker, _) in one_class.items():
            o = c[c["design"] == design]
            ax.plot(
                o["batch_size"],
                o["mean"],
                marker,
                ms=3.5,
                color=colour,
                mfc="white" if design == "own_class" else colour,
            )
    ax.set_title(f"{figures.LABELS[norm]} (grid)")
fig.legend(handles, labels, loc="outside lower center", ncol=6, frameon=False, fontsize=6)
for ax in axes[panels:]:
    ax.set_visible(False)
for ax in axes:
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(b) for b in sizes])
for i, ax in enumerate(axes[:panels]):
    if i + NCOLS >= panels:  # the lowest panel of its column
        ax.xaxis.set_tick_params(labelbottom=True)
        ax.set_xlabel("probe batch size $b$")
for ax in axes[::NCOLS]:
    ax.set_ylabel("flip rate")
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
