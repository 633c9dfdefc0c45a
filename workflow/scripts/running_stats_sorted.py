"""Rule evaluate_sorted: class-sorted and shuffled networks of one batch size on the test half."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake)  # noqa: F821
import torch  # noqa: E402

from bnstudy import io, model, running_stats, train  # noqa: E402

inp, p = snakemake.input, snakemake.params  # noqa: F821
b = int(snakemake.wildcards.batch_size)  # noqa: F821
x = torch.from_numpy(io.read_array(inp.x_test))
y = torch.from_numpy(io.read_array(inp.y_test))
n_train = len(io.read_array(inp.y_train))
rows = []
for order, paths in (("sorted", list(inp.sorted_weights)), ("shuffled", list(inp.shuffled_weights))):
    if not paths:
        log.info("no shuffled grid network at batch size %d: sorted only", b)
        continue
    stacked, spec, metas = model.load_stack(paths)
    scores = running_stats.trained_divergence(stacked, spec, x, y, b, p.seed, train.final_limits(metas[0], n_train))
    for i, meta in enumerate(metas):
        rows.append({"normaliser": spec.normaliser, "batch_size": b, "order": order, "seed": int(meta["seed"]),
                     **{k: float(v[i]) for k, v in scores.items()}})
io.write_table(snakemake.output.cell, rows)  # noqa: F821
log.info("rows %s", rows)
