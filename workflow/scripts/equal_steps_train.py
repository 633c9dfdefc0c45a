"""Rule train_equal_steps: batch norm or no normaliser at one end of the grid's batch sizes, trained for
the other end's number of steps, and scored in inference mode (bnstudy.studies.equal_steps.science)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.nets import network
from bnstudy.nets.recipe import Recipe
from bnstudy.studies.equal_steps import science
from bnstudy.studies.equal_steps.design import grid_steps

p, inp = snakemake.params, snakemake.input
x, y = io.read_array(inp.x), io.read_array(inp.y)
spec = network.spec_from_params(p.net, inputs=x.shape[1])
recipe, other = Recipe.from_params(p.recipe), Recipe.from_params(p.other)
seeds = [int(s) for s in p.seeds]
log.info("spec %s recipe %s steps of %s seeds %s", spec, recipe, other, seeds)
stacked = science.train_arm(spec, recipe, other, seeds, x, y, threads=snakemake.threads)
rows = science.accuracy_rows(stacked, spec, seeds, io.read_array(inp.x_test), io.read_array(inp.y_test))
head = {
    "normaliser": spec.normaliser,
    "batch_size": recipe.batch_size,
    "other": other.batch_size,
    "steps": grid_steps(len(y), other.batch_size, other.epochs),
    "own_steps": grid_steps(len(y), recipe.batch_size, recipe.epochs),
}
io.write_table(snakemake.output.accuracy, [head | r for r in rows])
log.info("accuracy %s", rows)
