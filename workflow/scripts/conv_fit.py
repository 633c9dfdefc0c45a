"""Rule train_conv: one normaliser's convolutional networks at every batch size x seed, scored on
the test half in inference mode and in training mode (bnstudy.studies.conv.science.train_normaliser)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.nets import conv_train
from bnstudy.nets.recipe import Recipe
from bnstudy.studies.conv import science as conv_study

inp, out, p = snakemake.input, snakemake.output, snakemake.params
spec = conv_train.ConvSpec.from_params(snakemake.wildcards.normaliser, p.spec)
seeds = [int(s) for s in p.seeds]
weights, runs, epochs = conv_study.train_normaliser(
    spec,
    Recipe.from_params(p.recipe),
    [int(b) for b in p.batch_sizes],
    seeds,
    io.read_array(inp.x),
    io.read_array(inp.y),
    io.read_array(inp.x_test),
    io.read_array(inp.y_test),
    int(p.eval_seed),
    threads=snakemake.threads,
)
meta = spec.meta() | {"recipe": str(p.recipe), "seeds": str(seeds)}
io.write_weights(out.weights, weights, meta)
io.write_table(out.runs, runs)
io.write_table(out.epochs, epochs)
log.info("runs %s", runs.to_dict("records"))
