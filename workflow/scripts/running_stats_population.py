"""Rule population: the enumerated synthetic population of the running-statistics study."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.nets import data

p = snakemake.params
x = data.synthetic_population(p.seed, p.rows, p.features)
io.write_array(snakemake.output.population, x)
log.info("population %s; means %s; variances %s", x.shape, x.mean(0).round(3), x.var(0).round(3))
