"""Rule figure_batch_size: accuracy against training batch size."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy import figures, io, normalisers

summary = io.read_table(snakemake.input.summary)
fig, ax = figures.new(3.4, 2.4)
for norm, group in summary.groupby("normaliser", sort=False):
    for mode, style in (("inference", "-"), ("training", "--")):
        g = group[group["mode"] == mode].sort_values("batch_size")
        if mode == "training" and norm not in normalisers.BATCH_NAMES:
            continue  # identical to inference mode by construction
        label = figures.LABELS[norm] + (" (training mode)" if mode == "training" else "")
        ax.plot(
            g["batch_size"],
            g["mean"],
            linestyle=style,
            marker=figures.MARKERS[norm],
            ms=3,
            color=figures.COLOURS[norm],
            label=label,
        )
        ax.fill_between(g["batch_size"], g["ci_low"], g["ci_high"], color=figures.COLOURS[norm], alpha=0.15, lw=0)
ax.set_xscale("log", base=2)
ax.set_xticks(sorted(summary["batch_size"].unique()))
ax.set_xticklabels([str(b) for b in sorted(summary["batch_size"].unique())])
ax.set_xlabel("training batch size")
ax.set_ylabel("test accuracy")
ax.legend(frameon=False, ncol=1, loc="lower right")
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
