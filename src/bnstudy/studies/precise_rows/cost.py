"""PreciseBN on a budget in the cost model (bnstudy.pipeline.plan): the rows each job passes through its
networks (:func:`bnstudy.studies.precise_rows.science.evaluate`)."""

from __future__ import annotations

from bnstudy.pipeline.plan import Work, block_seeds, network_family, row_multiply_adds, test_rows, train_rows


def _precise_rows(p, wc, config):
    # each network of the block: the exact statistics (every training row) and the whole pass (about
    # every training row again); each budget of at least one batch, its first rows // b batches per
    # replicate; then the test rows in inference mode once per arm: the running averages, the exact
    # statistics, each budget's replicates and the whole pass (science.arms)
    b, settings = int(wc["batch_size"]), p["settings"]
    budgets = [int(k) for k in settings["budgets"] if int(k) >= b]
    replicates = int(settings["replicates"])
    budget_rows = replicates * sum(k // b * b for k in budgets)
    arms = 3 + replicates * len(budgets)
    rows = 2 * train_rows(config) + budget_rows + arms * test_rows(config)
    return block_seeds(config, wc["block"]) * rows * row_multiply_adds(config)


WORK = {
    "evaluate_precise_rows": Work(
        "rows x M multiply-adds per row (seeds of the block x (2 training passes + budgets' rows + arms x test"
        " rows) x network)",
        _precise_rows,
        ("precise_rows.rows", "precise_rows.replicates", "grid.seed_block", "grid.seeds", "grid.batch_sizes"),
        variant=network_family,
    ),
}
# Rows of the cost table (workflow/resources/cpu_seconds.tsv) that no calibration has measured yet: such a
# job costs the table's '*' row until `python -m bnstudy.pipeline.plan calibrate` from a build that ran it.
UNMEASURED = {"evaluate_precise_rows:conv"}
