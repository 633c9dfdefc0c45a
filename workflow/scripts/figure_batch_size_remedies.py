"""Rule figure_batch_size_remedies: batch norm's inference accuracy under each set of running statistics."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy import figures, io

summary = io.read_table(snakemake.input.summary)
BN = figures.COLOURS["batchnorm"]
LINES = [  # (normaliser, mode, label, colour, style, marker): every estimator is batch norm's, in its colour
    ("none", "inference", "none", figures.COLOURS["none"], "-", figures.MARKERS["none"]),
    ("batchnorm", "inference", "BN, EMA (trained)", BN, "-", figures.MARKERS["batchnorm"]),
    ("batchnorm", "debiased_ema", "BN, debiased EMA", BN, ":", "o"),
    ("batchnorm", "cumulative", "BN, cumulative", BN, "-.", "^"),
    ("batchnorm", "precise_bn", "BN, PreciseBN", BN, "--", "v"),
    ("batchnorm", "exact", "BN, exact", BN, (0, (1, 1)), "D"),
]
fig, ax = figures.new(3.4, 3.0)
for norm, mode, label, colour, style, marker in LINES:
    g = summary[(summary["normaliser"] == norm) & (summary["mode"] == mode)].sort_values("batch_size")
    if g.empty:
        continue
    ax.plot(g["batch_size"], g["mean"], linestyle=style, marker=marker, ms=2.5, color=colour, label=label)
    ax.fill_between(g["batch_size"], g["ci_low"], g["ci_high"], color=colour, alpha=0.08, lw=0)
sizes = sorted(summary["batch_size"].unique())
ax.set_xscale("log", base=2)
ax.set_xticks(sizes)
ax.set_xticklabels([str(b) for b in sizes])
ax.set_xlabel("training batch size")
ax.set_ylabel("inference-mode test accuracy")
ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize="small")
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("drew %d lines", len(LINES))
