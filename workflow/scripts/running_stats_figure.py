"""Rule figure_running_stats: running-statistics error against batch size (bnstudy.figures_running_stats)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy import figures, io
from bnstudy.figures_running_stats import running_stats

fig = running_stats(
    io.read_table(snakemake.input.passes), snakemake.params.keep, io.read_table(snakemake.input.shuffles)
)
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
