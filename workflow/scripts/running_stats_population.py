"""Rule population: the enumerated synthetic population of the running-statistics study."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
from bnstudy import data, io  # noqa: E402

p = snakemake.params  # noqa: F821
x = data.synthetic_population(p.seed, p.rows, p.features)
io.write_array(snakemake.output.population, x)  # noqa: F821
log.info("population %s; means %s; variances %s", x.shape, x.mean(0).round(3), x.var(0).round(3))
