"""The learning-rate sweep's rules in the cost model (bnstudy.pipeline.plan): its training runs, fitted with
every rule that trains."""

from __future__ import annotations

from bnstudy.pipeline.plan import (
    PER_JOB,
    TRAINING,
    Work,
    epoch_steps,
    network_family,
    row_multiply_adds,
    rows_per_step,
    train_rows,
)


def _lr_sweep(p, wc, config):
    """One split: the networks on the rows left by the validation split; K folds: K times the
    networks, each on (K - 1) / K of the training half's rows."""
    sweep = config["lr_sweep"]
    folds = sweep.get("folds")
    if folds:
        rows, fits = round(train_rows(config) * (folds - 1) / folds), folds
    else:
        rows, fits = round(train_rows(config) * (1 - sweep["validation_fraction"])), 1
    per_step = rows_per_step(p, wc, config)
    per_model = sum(epoch_steps(rows, b, p["recipe"]["last_batch"], per_step) for b in p["batch_sizes"])
    return fits * len(p["seeds"]) * len(p["lrs"]) * p["recipe"]["epochs"] * per_model * row_multiply_adds(config)


WORK = {
    "lr_sweep_split": PER_JOB,
    "train_lr_sweep": Work(
        "step-equivalents x M multiply-adds per row (seeds x rates x epochs x batch sizes' (steps + rows/r) x net)",
        _lr_sweep,
        (
            "lr_sweep.epochs",
            "lr_sweep.seeds",
            "lr_sweep.folds",
            "lr_sweep.lrs",
            "grid.batch_sizes",
            "lr_sweep.normalisers",
        ),
        group=TRAINING,
        variant=network_family,
    ),
}
