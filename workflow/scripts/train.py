"""Rules train_*: train one network per seed of a block; write weights, epoch logs and, for the
grid, study 2's evaluation of what was trained."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.evaluation.accuracy import load_trained
from bnstudy.nets import model, network, weights
from bnstudy.nets.recipe import Recipe
from bnstudy.studies.batch_size import evaluation

p, out = snakemake.params, snakemake.output
x = io.read_array(snakemake.input.x)
y = io.read_array(snakemake.input.y)
spec = network.spec_from_params(p.net, inputs=x.shape[1])
recipe = Recipe.from_params(p.recipe)
seeds = [int(s) for s in p.seeds]
log.info("spec %s recipe %s seeds %s", spec, recipe, seeds)
validation = None
if "x_validation" in snakemake.input.keys():  # the grid on a data set with a validation split: curves
    validation = (io.read_array(snakemake.input.x_validation), io.read_array(snakemake.input.y_validation))
stacked, epochs = spec.train_models(recipe, seeds, x, y, threads=snakemake.threads, validation=validation)
weights.write(out.weights, spec, recipe, seeds, model.unstack(stacked))
io.write_table(out.epochs, epochs)
for row in epochs[-len(seeds) :]:
    log.info("final epoch: %s", row)
if "accuracy" in out.keys():  # the grid's cells: evaluate the networks as written
    cell = load_trained([out.weights], snakemake.input.x_test, snakemake.input.y_test, snakemake.input.y)
    accuracy, correct = evaluation.cell_tables(cell, recipe.batch_size, p.eval_seed)
    io.write_table(out.accuracy, accuracy)
    io.write_table(out.correct, correct)
    log.info("accuracy %s", accuracy)
