"""Rule evaluate_sorted: class-sorted and shuffled networks of one batch size on the test half."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.evaluation import accuracy

inp, p = snakemake.input, snakemake.params
b = int(snakemake.wildcards.batch_size)
rows = []
for order, paths in (("sorted", list(inp.sorted_weights)), ("shuffled", list(inp.shuffled_weights))):
    if not paths:
        log.info("no shuffled grid network at batch size %d: sorted only", b)
        continue
    cell = accuracy.load_trained(paths, inp.x_test, inp.y_test, inp.y_train)
    scores = accuracy.trained_divergence(cell.stacked, cell.spec, cell.x, cell.y, b, p.seed, cell.limits)
    for i, meta in enumerate(cell.metas):
        rows.append(
            {
                "normaliser": cell.spec.normaliser,
                "batch_size": b,
                "order": order,
                "seed": int(meta["seed"]),
                **{k: float(v[i]) for k, v in scores.items()},
            }
        )
io.write_table(snakemake.output.cell, rows)
log.info("rows %s", rows)
