"""The convolutional study's config section against the data set and the grid: its check, run with the
config checks (``bnstudy.base.catalogue``)."""

from __future__ import annotations

from bnstudy.base.config import ConfigError, Parts
from bnstudy.base.datasets import data_config


def check(config: dict, part: Parts) -> None:
    """The CNN is compared with none and beside the MLP's grid cells; its groups divide its channels."""
    c = config["conv"]
    if data_config(config)["name"] != "digits":
        raise ConfigError(
            "config error: conv: the convolutional study reads 8x8 digits; leave it out for this data set"
        )
    for name in ("none", "batchnorm"):
        if name not in c["normalisers"]:
            raise ConfigError(f"config error: conv.normalisers: {name} is missing (against none; study 1)")
    for i, name in enumerate(c["normalisers"]):
        if name not in config["normalisers"]:
            raise ConfigError(f"config error: conv.normalisers[{i}]: {name} is not a grid normaliser (normalisers)")
    for i, b in enumerate(c["batch_sizes"]):
        if b not in config["grid"]["batch_sizes"]:
            raise ConfigError(f"config error: conv.batch_sizes[{i}]: {b} is not one of grid.batch_sizes")
    for i, ch in enumerate(c["channels"]):
        if ch % c["groups"]:
            raise ConfigError(f"config error: conv.groups: {c['groups']} does not divide conv.channels[{i}] {ch}")
    if config["grid"]["optimizer"] != "adam":
        raise ConfigError("config error: grid.optimizer: the CNN trains with the grid's optimiser, which must be adam")
