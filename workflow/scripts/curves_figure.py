"""Rule figure_curves: validation accuracy by epoch (bnstudy.studies.curves.figure)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.paper import figures
from bnstudy.studies.curves import figure

figures.save(figure.curves(io.read_table(snakemake.input.by_epoch)), snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
