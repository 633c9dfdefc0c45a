"""Rule train_accumulation: batch norm accumulating micro-batches, ghost batch norm in virtual
batches of the micro-batch and batch norm at the micro-batch with the rate scaled, one seed block;
weights, epoch logs, accuracy (inference mode with running and with recomputed statistics, training
mode), and how far accumulation and ghost batch norm lie apart (bnstudy.studies.accumulation.science)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.nets import model, network, weights
from bnstudy.nets.recipe import Recipe
from bnstudy.studies.accumulation import science as accumulation

inp, out, p = snakemake.input, snakemake.output, snakemake.params
x = io.read_array(inp.x)
spec = network.spec_from_params(p.net, inputs=x.shape[1])
recipe = Recipe.from_params(p.recipe)
seeds = [int(s) for s in p.seeds]
stacks, logs, accuracy, differences = accumulation.train_block(
    spec,
    recipe,
    p.micro_batches,
    seeds,
    x,
    io.read_array(inp.y),
    io.read_array(inp.x_test),
    io.read_array(inp.y_test),
    p.eval_seed,
    threads=snakemake.threads,
)
if list(stacks) != list(p.variants):
    raise RuntimeError(f"variants {list(stacks)} are not the rule's {list(p.variants)}")
for path, (v_spec, v_recipe, stacked) in zip(out.weights, stacks.values()):
    weights.write(path, v_spec, v_recipe, seeds, model.unstack(stacked))
io.write_table(out.epochs, logs)
io.write_table(out.accuracy, accuracy)
io.write_table(out.differences, differences)
log.info("accuracy %s", accuracy)
log.info("differences %s", differences)
