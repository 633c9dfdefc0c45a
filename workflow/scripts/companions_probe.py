"""Rules probe_companions_*: per-example probe counts of every network in the input weights files."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.studies.companions import science as companions

inp, p = snakemake.input, snakemake.params
rows = companions.probe_files(
    inp.weights,
    p.network,
    io.read_array(inp.x_test),
    io.read_array(inp.y_test),
    len(io.read_array(inp.y_train)),
    io.read_table(inp.examples)["example"].to_numpy(),
    seed=p.seed,
    batch_sizes=p.batch_sizes,
    batches_per_example=p.batches_per_example,
    one_class_batch_size=p.one_class_batch_size,
    exact_companions=p.get("exact_companions"),
    batches_used=p.get("batches_used"),
)
io.write_table(snakemake.output.probes, rows)
log.info("%d rows, %d flips", len(rows), sum(r["flips"] for r in rows))
