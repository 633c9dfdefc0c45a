"""Rule evaluate_grid: accuracy of every seed of one grid cell, per evaluation mode."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
from bnstudy import evaluation, io  # noqa: E402

inp, p = snakemake.input, snakemake.params  # noqa: F821
cell = evaluation.load_trained(inp.weights, inp.x_test, inp.y_test, inp.y_train)
b = int(snakemake.wildcards.batch_size)  # noqa: F821
hits = evaluation.inference_correct(cell.stacked, cell.spec, cell.x, cell.y)
seeds = [int(meta["seed"]) for meta in cell.metas]
modes = {
    "inference": evaluation.share(hits),
    "training": evaluation.train_mode_accuracy(cell.stacked, cell.spec, cell.x, cell.y, b, p.seed, cell.limits),
}
rows = [
    {"normaliser": cell.spec.normaliser, "batch_size": b, "seed": int(meta["seed"]), "mode": mode,
     "accuracy": float(acc[i])}
    for mode, acc in modes.items() for i, meta in enumerate(cell.metas)
]
io.write_table(snakemake.output.accuracy, rows)  # noqa: F821
io.write_table(snakemake.output.correct, [{"normaliser": cell.spec.normaliser, "batch_size": b} | r  # noqa: F821
                                          for r in evaluation.correct_rows(hits, seeds, "inference")])
log.info("rows %s", rows)
