"""Rules train_*: train one network per seed; write weights and epoch logs."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy import io, model, train
from bnstudy.recipe import Recipe

p = snakemake.params
spec = model.NetSpec(
    normaliser=p.net["normaliser"],
    widths=(64, *p.net["hidden"], 10),
    groups=p.net["groups"],
    eps=p.net["eps"],
    momentum=p.net["momentum"],
)
recipe = Recipe.from_params(p.recipe)
x = io.read_array(snakemake.input.x)
y = io.read_array(snakemake.input.y)
log.info("spec %s recipe %s seeds %s", spec, recipe, p.seeds)
stacked, epochs = train.train_models(spec, recipe, list(p.seeds), x, y, threads=snakemake.threads)
for seed, state, path in zip(p.seeds, model.unstack(stacked), snakemake.output.weights):
    meta = spec.metadata() | recipe.metadata() | {"seed": str(seed)}
    io.write_weights(path, state, meta)
io.write_table(snakemake.output.epochs, epochs)
for row in epochs[-len(p.seeds) :]:
    log.info("final epoch: %s", row)
