"""The fine-tuning study's config section against the grid and the training half: its check, run with the
config checks (``bnstudy.base.catalogue``)."""

from __future__ import annotations

from bnstudy.base.config import ConfigError, Parts


def check(config: dict, part: Parts) -> None:
    """The fine-tuned networks are batch-norm grid networks; a batch fits in the training half;
    the networks are measured at least once along the fine-tuning."""
    t = config["finetune"]
    if "batchnorm" not in config["normalisers"]:
        raise ConfigError("config error: finetune: batchnorm (the fine-tuned networks) is not one of normalisers")
    if t["source_batch_size"] not in config["grid"]["batch_sizes"]:
        raise ConfigError(
            f"config error: finetune.source_batch_size: {t['source_batch_size']} is not one of grid.batch_sizes"
        )
    train_rows = part.train_rows
    if t["batch_size"] > train_rows:
        raise ConfigError(
            f"config error: finetune.batch_size: {t['batch_size']} is larger than the training half ({train_rows} rows)"
        )
    if t["every"] > t["steps"]:
        raise ConfigError(f"config error: finetune.every: {t['every']} is more than finetune.steps {t['steps']}")
