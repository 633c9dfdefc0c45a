"""Rule running_stats: one batch-norm layer over one pass of the population, every estimator."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.studies.running_stats import science as running_stats

p = snakemake.params
x = io.read_array(snakemake.input.population)
rows = []
for order in running_stats.ORDERS:
    rows += running_stats.study(x, p.batch_sizes, p.keeps, order, p.seed, p.sort_feature)
io.write_table(snakemake.output.passes, rows)
io.write_table(snakemake.output.shuffles, running_stats.replicated_study(x, p.batch_sizes, p.keep, p.seed, p.shuffles))
log.info("%d rows", len(rows))
