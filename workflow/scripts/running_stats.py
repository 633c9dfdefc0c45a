"""Rule running_stats: one batch-norm layer over one pass of the population, every estimator."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
from bnstudy import io, running_stats  # noqa: E402

p = snakemake.params  # noqa: F821
x = io.read_array(snakemake.input.population)  # noqa: F821
rows = []
for order in running_stats.ORDERS:
    rows += running_stats.study(x, p.batch_sizes, p.keeps, order, p.seed, p.sort_feature)
io.write_table(snakemake.output.passes, rows)  # noqa: F821
io.write_table(snakemake.output.shuffles,  # noqa: F821
               running_stats.replicated_study(x, p.batch_sizes, p.keep, p.seed, p.shuffles))
log.info("%d rows", len(rows))
