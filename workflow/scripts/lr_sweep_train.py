"""Rule train_lr_sweep: one normaliser at every batch size x learning rate x seed, trained on the
training half minus the validation rows, scored in inference mode on the validation rows and the test half;
with folds (the split table has a ``fold`` column) every fold in turn, held out as the validation rows."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.nets import network
from bnstudy.nets.recipe import Recipe
from bnstudy.studies.lr_sweep import science as lr_sweep

inp, out, p = snakemake.input, snakemake.output, snakemake.params
x = io.read_array(inp.x)
spec = network.spec_from_params(p.net, inputs=x.shape[1])
split = io.read_table(inp.split)
if "fold" in split.columns:
    splits = lr_sweep.read_folds(split)
    train, rows = lr_sweep.fold_sweep, [splits]
else:
    train, rows = lr_sweep.sweep, list(lr_sweep.read_split(split))
runs, epochs = train(
    spec,
    Recipe.from_params(p.recipe),
    p.batch_sizes,
    p.lrs,
    [int(s) for s in p.seeds],
    x,
    io.read_array(inp.y),
    *rows,
    io.read_array(inp.x_test),
    io.read_array(inp.y_test),
    threads=snakemake.threads,
)
io.write_table(out.runs, runs)
io.write_table(out.epochs, epochs)
log.info("runs %s", runs.to_dict("records"))
