"""Rule figure_running_stats: running-statistics error against batch size, beside keep^updates."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy import figures, io

passes = io.read_table(snakemake.input.passes)
keep = snakemake.params.keep
shuffled = passes[passes["order"] == "shuffled"]
sizes = sorted(shuffled["batch_size"].unique())
keeps = sorted(shuffled["keep"].dropna().unique())
# the keep-factor of the trained networks highlighted, others in greys (light: forgets fast);
# no normaliser's colour (those mean a normaliser in every figure)
greys = iter(["#b0b0b0", "#202020", "#606060", "#d0d0d0"])
shades = {k: figures.OTHER["highlight"] if abs(k - keep) < 1e-12 else next(greys) for k in keeps}

fig, (ax, bx) = figures.new(6.8, 3.3, ncols=2)
for k in keeps:
    g = shuffled[(shuffled["estimator"] == "ema") & ((shuffled["keep"] - k).abs() < 1e-12)].sort_values("batch_size")
    strong = abs(k - keep) < 1e-12
    ax.plot(
        g["batch_size"],
        g["running_error"],
        "-o",
        ms=3.5,
        lw=1.8 if strong else 1.0,
        color=shades[k],
        label=f"measured, keep {k:g}",
    )
    ax.plot(
        g["batch_size"],
        g["predicted_error"],
        ":",
        marker="x",
        ms=4,
        lw=1.0,
        color=shades[k],
        label=f"keep$^{{u}}$ prediction, keep {k:g}",
    )
g = shuffled[(shuffled["estimator"] == "ema") & ((shuffled["keep"] - keep).abs() < 1e-12)].sort_values("batch_size")
ax.plot(
    g["batch_size"],
    g["batch_estimate_error"],
    "--s",
    ms=3,
    color=figures.OTHER["contrast"],
    lw=1.2,
    label="one batch's own estimate",
)
measured = shuffled[shuffled["estimator"] == "ema"][["running_error", "batch_estimate_error"]]
ax.set_ylim(bottom=float(measured.min().min()) / 10)  # keep^u of a fast-forgetting EMA falls far below
ax.set_title("shuffled batches: error of the statistics")
ax.set_ylabel("RMS error vs. population (mean, var)")

for order, style in (("shuffled", "-o"), ("sorted", "-^")):
    for est, colour, label in (
        ("ema", figures.OTHER["highlight"], f"EMA keep {keep:g}"),
        ("pooled", figures.OTHER["contrast"], "pooled statistics"),
    ):
        rows = passes[(passes["order"] == order) & (passes["estimator"] == est)]
        if est == "ema":
            rows = rows[(rows["keep"] - keep).abs() < 1e-12]
        rows = rows.sort_values("batch_size")
        bx.plot(
            rows["batch_size"],
            rows["train_eval_rmse"],
            style if order == "shuffled" else "--^",
            ms=3.5,
            lw=1.2,
            color=colour,
            label=f"{order}, {label}",
        )
bx.set_title("train/inference output divergence")
bx.set_ylabel("RMSE, training vs. inference mode")

for a in (ax, bx):
    a.set_xscale("log", base=2)
    a.set_yscale("log")
    a.set_xticks(sizes)
    a.set_xticklabels([str(b) for b in sizes])
    a.minorticks_off()
    a.set_xlabel("batch size $b$")
    a.grid(True, which="major", lw=0.3, alpha=0.5)
for a in (ax, bx):
    a.legend(frameon=False, fontsize=6, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.2))
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
