"""Rule evaluate_grid: accuracy of every seed of one grid cell, per evaluation mode."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy import evaluation, io

inp, p = snakemake.input, snakemake.params
cell = evaluation.load_trained(inp.weights, inp.x_test, inp.y_test, inp.y_train)
b = int(snakemake.wildcards.batch_size)
hits = evaluation.inference_correct(cell.stacked, cell.spec, cell.x, cell.y)
seeds = [int(meta["seed"]) for meta in cell.metas]
modes = {
    "inference": evaluation.share(hits),
    "training": evaluation.train_mode_accuracy(cell.stacked, cell.spec, cell.x, cell.y, b, p.seed, cell.limits),
}
rows = [
    {
        "normaliser": cell.spec.normaliser,
        "batch_size": b,
        "seed": int(meta["seed"]),
        "mode": mode,
        "accuracy": float(acc[i]),
    }
    for mode, acc in modes.items()
    for i, meta in enumerate(cell.metas)
]
io.write_table(snakemake.output.accuracy, rows)
io.write_table(
    snakemake.output.correct,
    [
        {"normaliser": cell.spec.normaliser, "batch_size": b} | r
        for r in evaluation.correct_rows(hits, seeds, "inference")
    ],
)
log.info("rows %s", rows)
