"""The accumulation study's config section against the grid: its check, run with the
config checks (``bnstudy.base.catalogue``)."""

from __future__ import annotations

from bnstudy.base.config import ConfigError, Parts
from bnstudy.base.normalisers import BATCH, get


def check(config: dict, part: Parts) -> None:
    """Accumulation is compared with the grid's batch-norm networks at the step's batch and at each
    micro-batch, and with ghost batch norm in virtual batches of the micro-batch (batch norm's
    arithmetic in groups): the normaliser is a grid normaliser computing plain batch norm, both
    sizes are grid batch sizes, and each micro-batch divides the batch into two or more."""
    a = config["accumulation"]
    if a["normaliser"] not in config["normalisers"] or get(a["normaliser"]).kernel != BATCH:
        raise ConfigError(
            f"config error: accumulation.normaliser: {a['normaliser']} is not a grid normaliser computing batch norm"
        )
    sizes = config["grid"]["batch_sizes"]
    if a["batch_size"] not in sizes:
        raise ConfigError(f"config error: accumulation.batch_size: {a['batch_size']} is not one of grid.batch_sizes")
    for i, m in enumerate(a["micro_batches"]):
        if m not in sizes:
            raise ConfigError(f"config error: accumulation.micro_batches[{i}]: {m} is not one of grid.batch_sizes")
        if m >= a["batch_size"] or a["batch_size"] % m:
            raise ConfigError(
                f"config error: accumulation.micro_batches[{i}]: {m} does not divide accumulation.batch_size "
                f"{a['batch_size']} into two or more micro-batches"
            )
