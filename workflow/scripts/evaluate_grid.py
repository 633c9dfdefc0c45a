"""Rule evaluate_grid: accuracy of every seed of one grid cell, per evaluation mode."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake)  # noqa: F821
import torch  # noqa: E402

from bnstudy import batch_size, io, model, train  # noqa: E402

inp, p = snakemake.input, snakemake.params  # noqa: F821
stacked, spec, metas = model.load_stack(inp.weights)
x = torch.from_numpy(io.read_array(inp.x_test))
y = torch.from_numpy(io.read_array(inp.y_test))
b = int(snakemake.wildcards.batch_size)  # noqa: F821
limits = train.final_limits(metas[0], len(io.read_array(inp.y_train)))
modes = {
    "inference": batch_size.inference_accuracy(stacked, spec, x, y),
    "training": batch_size.train_mode_accuracy(stacked, spec, x, y, b, p.seed, limits),
}
rows = [
    {"normaliser": spec.normaliser, "batch_size": b, "seed": int(meta["seed"]), "mode": mode,
     "accuracy": float(acc[i])}
    for mode, acc in modes.items() for i, meta in enumerate(metas)
]
io.write_table(snakemake.output.accuracy, rows)  # noqa: F821
log.info("rows %s", rows)
