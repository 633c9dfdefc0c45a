"""Rule finetune: every batch-norm network of the source batch size fine-tuned on each stream, live and frozen."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.evaluation import accuracy
from bnstudy.studies.finetune import science as finetune

inp, p = snakemake.input, snakemake.params
cell = accuracy.load_trained(list(inp.weights), inp.x_test, inp.y_test, inp.y_train)
settings = {"batch_size": p.batch_size, "steps": p.steps, "lrs": list(p.lrs), "every": p.every, "seed": p.seed}
networks, along = finetune.finetune_cell(cell, io.read_array(inp.x_train), io.read_array(inp.y_train), settings)
for row in networks:
    log.info("%s", row)
io.write_table(snakemake.output.networks, networks)
io.write_table(snakemake.output.along, along)
