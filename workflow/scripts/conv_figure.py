"""Rule figure_conv: the convolutional network beside the MLP (bnstudy.figures_conv)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy import figures, figures_conv, io

fig = figures_conv.conv(io.read_table(snakemake.input.side))
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
