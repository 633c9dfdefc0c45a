"""Rule figure_conv: the convolutional network beside the MLP (bnstudy.studies.conv.figure)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.paper import figures
from bnstudy.studies.conv import figure as figures_conv

fig = figures_conv.conv(io.read_table(snakemake.input.side))
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
