"""Rule figure_running_stats: running-statistics error against batch size (bnstudy.studies.running_stats.figure)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.paper import figures
from bnstudy.studies.running_stats.figure import running_stats

fig = running_stats(
    io.read_table(snakemake.input.passes), snakemake.params.keep, io.read_table(snakemake.input.shuffles)
)
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
