"""The budget study's config section against the grid: its check, run with the config checks
(``bnstudy.base.catalogue``)."""

from __future__ import annotations

from bnstudy.base.config import ConfigError, Parts


def check(config: dict, part: Parts) -> None:
    """The study recomputes batch norm's statistics, so the grid trains batch norm; the budgets
    increase, each is at least one batch of the smallest grid batch size (a budget smaller than a
    batch is left out at that batch size) and no more than the training rows
    (:attr:`Parts.train_rows`)."""
    s = config["precise_rows"]
    if "batchnorm" not in config["normalisers"]:
        raise ConfigError("config error: precise_rows: the grid's normalisers do not include batchnorm")
    rows = s["rows"]
    if rows != sorted(rows):
        raise ConfigError(f"config error: precise_rows.rows: {rows} is not increasing")
    smallest = min(config["grid"]["batch_sizes"])
    for i, k in enumerate(rows):
        if k < smallest:
            raise ConfigError(
                f"config error: precise_rows.rows[{i}]: {k} is less than one batch of every grid batch size "
                f"(the smallest is {smallest})"
            )
        if k > part.train_rows:
            raise ConfigError(
                f"config error: precise_rows.rows[{i}]: {k} is more than the {part.train_rows} training rows "
                f"({part.train_source})"
            )
