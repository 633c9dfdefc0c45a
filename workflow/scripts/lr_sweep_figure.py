"""Rule figure_lr_sweep: accuracy at each cell's chosen rate, and the chosen rates (bnstudy.studies.lr_sweep.figure)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.paper import figures
from bnstudy.studies.lr_sweep import figure as figures_lr_sweep

inp = snakemake.input
fig = figures_lr_sweep.lr_sweep(io.read_table(inp.best), io.read_table(inp.rates), snakemake.params.grid_lr)
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
