"""Rule figure_accumulation: accuracy of every configuration per micro-batch (bnstudy.studies.accumulation.figure)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.paper import figures
from bnstudy.studies.accumulation import figure as figures_accumulation

fig = figures_accumulation.accumulation(io.read_table(snakemake.input.cells), snakemake.params.batch_size)
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
