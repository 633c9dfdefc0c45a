"""Rules train_*: train one network per seed; write weights and epoch logs."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
from bnstudy import io, model, train  # noqa: E402
from bnstudy.recipe import Recipe  # noqa: E402

p = snakemake.params  # noqa: F821
spec = model.NetSpec(
    normaliser=p.net["normaliser"], widths=(64, *p.net["hidden"], 10), groups=p.net["groups"],
    eps=p.net["eps"], momentum=p.net["momentum"],
)
recipe = Recipe.from_params(p.recipe)
x = io.read_array(snakemake.input.x)  # noqa: F821
y = io.read_array(snakemake.input.y)  # noqa: F821
log.info("spec %s recipe %s seeds %s", spec, recipe, p.seeds)
stacked, epochs = train.train_models(spec, recipe, list(p.seeds), x, y, threads=snakemake.threads)  # noqa: F821
for seed, state, path in zip(p.seeds, model.unstack(stacked), snakemake.output.weights):  # noqa: F821
    meta = spec.metadata() | recipe.metadata() | {"seed": str(seed)}
    io.write_weights(path, state, meta)
io.write_table(snakemake.output.epochs, epochs)  # noqa: F821
for row in epochs[-len(p.seeds):]:
    log.info("final epoch: %s", row)
