"""Rule running_stats_selfchecks: the four self-checks and the differential check per pass."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
from bnstudy import io, selfchecks  # noqa: E402

p = snakemake.params  # noqa: F821
x = io.read_array(snakemake.input.population)  # noqa: F821
rows = selfchecks.table(x, p.batch_sizes, p.keep, p.seed, p.sort_feature)
io.write_table(snakemake.output.checks, rows)  # noqa: F821
for r in rows:
    log.info("%s", r)
