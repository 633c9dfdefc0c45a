"""Rule figure_batch_size_remedies: batch norm's inference accuracy under each set of running statistics."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
from bnstudy import figures, io  # noqa: E402

summary = io.read_table(snakemake.input.summary)  # noqa: F821
LINES = [  # (normaliser, mode, label, colour, style)
    ("none", "inference", "none", figures.COLOURS["none"], "-"),
    ("batchnorm", "inference", "BN, EMA (trained)", figures.COLOURS["batchnorm"], "-"),
    ("batchnorm", "debiased_ema", "BN, debiased EMA", "#9467bd", ":"),
    ("batchnorm", "cumulative", "BN, cumulative", "#8c564b", "-."),
    ("batchnorm", "precise_bn", "BN, PreciseBN", "#1f77b4", "--"),
    ("batchnorm", "exact", "BN, exact", "#2ca02c", (0, (1, 1))),
]
fig, ax = figures.new(3.4, 3.0)
for norm, mode, label, colour, style in LINES:
    g = summary[(summary["normaliser"] == norm) & (summary["mode"] == mode)].sort_values("batch_size")
    if g.empty:
        continue
    ax.plot(g["batch_size"], g["mean"], linestyle=style, marker="o", ms=2.5, color=colour, label=label)
    ax.fill_between(g["batch_size"], g["ci_low"], g["ci_high"], color=colour, alpha=0.12, lw=0)
sizes = sorted(summary["batch_size"].unique())
ax.set_xscale("log", base=2)
ax.set_xticks(sizes)
ax.set_xticklabels([str(b) for b in sizes])
ax.set_xlabel("training batch size")
ax.set_ylabel("inference-mode test accuracy")
ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize="small")
figures.save(fig, snakemake.output.pdf, snakemake.output.png)  # noqa: F821
log.info("drew %d lines", len(LINES))
