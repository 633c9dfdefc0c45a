"""Fine-tuning's rules in the cost model (bnstudy.pipeline.plan): fine-tuning steps of each source network."""

from __future__ import annotations

from bnstudy.pipeline.plan import Work, block_seeds, network_family, row_multiply_adds


def _finetune(p, wc, config, runs_per_rate: int = 4):
    # every source network of the seed block, each rate, runs_per_rate runs of the steps: random and
    # one-class streams, live and frozen
    per_network = runs_per_rate * len(p["lrs"]) * p["steps"]
    return block_seeds(config, wc["block"]) * per_network * row_multiply_adds(config)


def _finetune_arms(p, wc, config):
    # batch norm's three arms and each control, on both streams and both input conditions
    arms = 3 + len(p["normalisers"]) - 1
    return _finetune(p, wc, config, runs_per_rate=arms * 4)


WORK = {
    "finetune": Work(
        "fine-tuning steps x M multiply-adds per row (networks x rates x 4 streams x steps x network)",
        _finetune,
        ("finetune.steps", "finetune.lrs", "grid.seed_block", "grid.seeds"),
        variant=network_family,
    ),
    "finetune_arms": Work(
        "fine-tuning steps x M multiply-adds per row (networks x arms x rates x 2 streams x 2 inputs x steps x net)",
        _finetune_arms,
        ("finetune.steps", "finetune.lrs", "grid.seed_block", "grid.seeds"),
        variant=network_family,
    ),
}
