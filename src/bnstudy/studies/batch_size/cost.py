"""Study 2's rule in the cost model (bnstudy.pipeline.plan): the remedies' rows through each network."""

from __future__ import annotations

from bnstudy.pipeline.plan import Work, block_seeds, network_family, row_multiply_adds, test_rows, train_rows


def _remedies(p, wc, config):
    # each network's statistics over the training rows and its test rows' logits, in several ways
    return block_seeds(config, wc["block"]) * (train_rows(config) + test_rows(config)) * row_multiply_adds(config)


WORK = {
    "evaluate_remedies": Work(
        "rows x M multiply-adds per row (seeds of the block x (training + test rows) x network)",
        _remedies,
        ("grid.seed_block", "grid.seeds"),
        variant=network_family,
    ),
}
