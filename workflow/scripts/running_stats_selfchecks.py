"""Rule running_stats_selfchecks: the four self-checks and the differential check per pass."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.studies.running_stats import selfchecks

p = snakemake.params
x = io.read_array(snakemake.input.population)
rows = selfchecks.table(x, p.batch_sizes, p.keep, p.seed, p.sort_feature)
io.write_table(snakemake.output.checks, rows)
for r in rows:
    log.info("%s", r)
