"""Rule figure_batch_size: accuracy against training batch size (bnstudy.studies.batch_size.figure.batch_size)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.paper import figures
from bnstudy.studies.batch_size import figure

fig = figure.batch_size(io.read_table(snakemake.input.summary), io.read_table(snakemake.input.gains))
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
