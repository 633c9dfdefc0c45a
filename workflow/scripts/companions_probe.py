"""Rules probe_companions_grid / probe_companions_dependence: per-example probe counts."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake)  # noqa: F821
import pandas as pd  # noqa: E402

from bnstudy import companions, io, train  # noqa: E402

inp, p = snakemake.input, snakemake.params  # noqa: F821
cell = train.load_trained(inp.weights, inp.x_test, inp.y_test, inp.y_train)
examples = io.read_table(inp.examples)["example"].to_numpy()
log.info("network %s, %s, %d models, renorm limits %s", p.network, cell.spec, len(cell.metas), cell.limits)
rows = companions.probe_network(
    cell.stacked, cell.spec, cell.x, cell.y, examples, batch_sizes=p.batch_sizes,
    batches_per_example=p.batches_per_example, one_class_batch_size=p.one_class_batch_size,
    seed=p.seed, limits=cell.limits,
)
table = pd.DataFrame(rows)
table.insert(0, "seed", [int(cell.metas[i]["seed"]) for i in table.pop("model")])
table.insert(0, "train_batch_size", int(cell.metas[0]["batch_size"]))
table.insert(0, "normaliser", cell.spec.normaliser)
table.insert(0, "network", p.network)
io.write_table(snakemake.output.probes, table)  # noqa: F821
log.info("%d rows, %d flips", len(table), int(table["flips"].sum()))
