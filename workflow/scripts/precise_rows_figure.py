"""Rule figure_precise_rows: accuracy against the exact statistics by rows pooled
(bnstudy.studies.precise_rows.figure)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.paper import figures
from bnstudy.studies.precise_rows import figure

figures.save(figure.precise_rows(io.read_table(snakemake.input.cells)), snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
