"""Rule serve_stream: the random and the class-sorted stream through every served grid network."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.evaluation import accuracy
from bnstudy.studies.serving import science as serving

inp, p = snakemake.input, snakemake.params
networks, along = [], []
for b in p.train_batch_sizes:
    paths = [w for w in inp.weights if f"/b{b}/" in w]
    cell = accuracy.load_trained(paths, inp.x_test, inp.y_test, inp.y_train)
    rows, positions = serving.serve_cell(cell, p.batch_size, p.seed, p.passes, p.held_out, p.replicates)
    if p.training_rows:  # the random stream's control: training rows in place of the test rows
        x_train, y_train = io.read_array(inp.x_train), io.read_array(inp.y_train)
        rows += serving.serve_training_rows(cell, x_train, y_train, p.batch_size, p.seed, p.passes, p.held_out,
                                            p.replicates)  # fmt: skip
    networks += rows
    along += positions
    log.info("trained at b=%d: %s", b, rows)
io.write_table(snakemake.output.networks, networks)
io.write_table(snakemake.output.along, along)
