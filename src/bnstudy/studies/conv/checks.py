"""The convolutional study's config section against the data set and the grid: its check, run with the
config checks (``bnstudy.base.catalogue``)."""

from __future__ import annotations

from bnstudy.base.config import ConfigError, Parts, check_skips


def channels(c: dict) -> list[int]:
    """The convolutions' output channels: ``conv.channels``, or those of ``conv.layers``."""
    return [int(layer["channels"]) for layer in c["layers"]] if "layers" in c else [int(v) for v in c["channels"]]


def check(config: dict, part: Parts) -> None:
    """The CNN is compared with none and beside the MLP's grid cells; its groups divide its channels;
    the exact design's pool of companions fits in the test part. Any data set: the network reads
    its images at the data set's side (square, one channel)."""
    c = config["conv"]
    for name in ("none", "batchnorm"):
        if name not in c["normalisers"]:
            raise ConfigError(f"config error: conv.normalisers: {name} is missing (against none; study 1)")
    for i, name in enumerate(c["normalisers"]):
        if name not in config["normalisers"]:
            raise ConfigError(f"config error: conv.normalisers[{i}]: {name} is not a grid normaliser (normalisers)")
    for i, b in enumerate(c["batch_sizes"]):
        if b not in config["grid"]["batch_sizes"]:
            raise ConfigError(f"config error: conv.batch_sizes[{i}]: {b} is not one of grid.batch_sizes")
    if ("channels" in c) == ("layers" in c):
        raise ConfigError(
            "config error: conv: give its convolutions as conv.channels or as conv.layers (one of the two)"
        )
    where = "conv.layers[{}].channels" if "layers" in c else "conv.channels[{}]"
    for i, ch in enumerate(channels(c)):
        if ch % c["groups"]:
            raise ConfigError(f"config error: conv.groups: {c['groups']} does not divide {where.format(i)} {ch}")
    check_skips(c.get("layers", []), "conv.layers")
    pool = c["probe"].get("exact_companions")
    if pool is not None and pool > part.test_rows:
        raise ConfigError(
            f"config error: conv.probe.exact_companions: {pool} exceeds the {part.test_rows} test rows "
            f"({part.test_source})"
        )
    if config["grid"]["optimizer"] != "adam":
        raise ConfigError("config error: grid.optimizer: the CNN trains with the grid's optimiser, which must be adam")
