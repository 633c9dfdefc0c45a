"""Rule figure_lr_sweep: accuracy at each cell's chosen rate, and the chosen rates (bnstudy.figures_lr_sweep)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy import figures, figures_lr_sweep, io

inp = snakemake.input
fig = figures_lr_sweep.lr_sweep(io.read_table(inp.best), io.read_table(inp.rates), snakemake.params.grid_lr)
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
