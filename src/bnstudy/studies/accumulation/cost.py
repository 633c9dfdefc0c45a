"""Gradient accumulation's rule in the cost model (bnstudy.pipeline.plan): its training runs, fitted with
every rule that trains."""

from __future__ import annotations

from bnstudy.pipeline.plan import (
    TRAINING,
    Work,
    epoch_steps,
    network_family,
    row_multiply_adds,
    rows_per_step,
    train_rows,
)


def _accumulation(p, wc, config):
    # every variant runs one forward/backward pass per micro-batch
    per_variant = len(p["variants"]) / len(p["micro_batches"])
    rows, epochs = train_rows(config), p["recipe"]["epochs"]
    per_step = rows_per_step(p, wc, config)
    steps = sum(epoch_steps(rows, m, "drop", per_step) for m in p["micro_batches"])
    return len(p["seeds"]) * epochs * per_variant * steps * row_multiply_adds(config)


WORK = {
    "train_accumulation": Work(
        "step-equivalents x M multiply-adds per row (seeds x epochs x variants x (micro-batches + rows/r) x network)",
        _accumulation,
        ("grid.epochs", "accumulation.micro_batches", "grid.seed_block", "grid.seeds"),
        group=TRAINING,
        variant=network_family,
    ),
}
