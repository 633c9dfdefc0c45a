"""Rules probe_companions_grid / probe_companions_dependence: per-example probe counts."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd

from bnstudy import companions, io, recipe, weights

inp, p = snakemake.input, snakemake.params
stacked, spec, metas = weights.read(inp.weights)
x, y = io.read_array(inp.x_test), io.read_array(inp.y_test)
limits = recipe.final_limits(metas[0], len(io.read_array(inp.y_train)))  # batch renorm's (rmax, dmax) at the end
examples = io.read_table(inp.examples)["example"].to_numpy()
log.info("network %s, %s, %d models, renorm limits %s", p.network, spec, len(metas), limits)
rows = companions.probe_network(
    stacked,
    spec,
    x,
    y,
    examples,
    batch_sizes=p.batch_sizes,
    batches_per_example=p.batches_per_example,
    one_class_batch_size=p.one_class_batch_size,
    seed=p.seed,
    limits=limits,
)
table = pd.DataFrame(rows)
table.insert(0, "seed", [int(metas[i]["seed"]) for i in table.pop("model")])
table.insert(0, "train_batch_size", int(metas[0]["batch_size"]))
table.insert(0, "normaliser", spec.normaliser)
table.insert(0, "network", p.network)
io.write_table(snakemake.output.probes, table)
log.info("%d rows, %d flips", len(table), int(table["flips"].sum()))
