"""The equal-steps study in the cost model (bnstudy.pipeline.plan): its training jobs, priced as every
rule that trains is (one fit per network family, step-equivalents x the network)."""

from __future__ import annotations

from bnstudy.pipeline.plan import (
    TRAIN_UNIT,
    TRAINING,
    Work,
    network_family,
    row_multiply_adds,
    rows_per_step,
    train_rows,
)


def _arm(p, wc, config):
    # each seed's network: the other batch size's grid steps, each a batch of its own batch size
    own, other = p["recipe"], p["other"]
    steps = int(other["epochs"]) * (train_rows(config) // int(other["batch_size"]))
    per_seed = steps + steps * int(own["batch_size"]) / rows_per_step(p, wc, config)
    return len(p["seeds"]) * per_seed * row_multiply_adds(config)


WORK = {
    "train_equal_steps": Work(
        TRAIN_UNIT,
        _arm,
        ("equal_steps.seeds", "equal_steps.arms", "grid.epochs", "grid.batch_sizes", "split.test_size"),
        group=TRAINING,
        variant=network_family,
    ),
}
# Rows of the cost table (workflow/resources/cpu_seconds.tsv) that no calibration has measured yet: such a
# job costs the table's '*' row until `python -m bnstudy.pipeline.plan calibrate` from a build that ran it.
UNMEASURED = {"train_equal_steps:mlp", "train_equal_steps:conv"}
