"""Rule train_renorm_ramp: batch renorm at one grid batch size with each schedule variant of its limits,
the grid's recipe otherwise, scored in inference mode (bnstudy.studies.renorm_ramp.science)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.nets import network
from bnstudy.studies.renorm_ramp import science

p, inp = snakemake.params, snakemake.input
x, y = io.read_array(inp.x), io.read_array(inp.y)
spec = network.spec_from_params(p.net, inputs=x.shape[1])
log.info("spec %s recipe %s schedules %s seeds %s", spec, p.recipe, p.schedules, p.seeds)
rows = science.train_variants(
    spec,
    dict(p.recipe),
    list(p.schedules),
    dict(p.batchrenorm),
    p.seeds,
    x,
    y,
    io.read_array(inp.x_test),
    io.read_array(inp.y_test),
    threads=snakemake.threads,
)
io.write_table(snakemake.output.accuracy, rows)
log.info("accuracy %s", rows)
