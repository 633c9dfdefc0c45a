"""The learning-rate sweep's config section against the grid: its check, run with the
config checks (``bnstudy.base.catalogue``)."""

from __future__ import annotations

from bnstudy.base.config import ConfigError, Parts


def check(config: dict, part: Parts) -> None:
    """The learning-rate sweep compares batch norm with none, against the grid's rate."""
    lr = config["lr_sweep"]
    if ("folds" in lr) == ("validation_fraction" in lr):
        raise ConfigError(
            "config error: lr_sweep.folds: set exactly one of lr_sweep.folds (K-fold cross-validation) and "
            f"lr_sweep.validation_fraction (one split); {'both are' if 'folds' in lr else 'neither is'} set"
        )
    if "folds" not in lr and len(lr["seeds"]) < 2:
        raise ConfigError(
            "config error: lr_sweep.seeds: at least 2 seeds for an interval where the rate is chosen on one "
            "validation split (lr_sweep.validation_fraction)"
        )
    for name in ("none", "batchnorm"):
        if name not in lr["normalisers"]:
            raise ConfigError(f"config error: lr_sweep.normalisers: {name} is missing (batch norm minus none)")
    for name in lr["normalisers"]:
        if name not in config["normalisers"]:
            raise ConfigError(f"config error: lr_sweep.normalisers: {name} is not a grid normaliser (normalisers)")
    if config["grid"]["lr"] not in lr["lrs"]:
        raise ConfigError(f"config error: lr_sweep.lrs: the grid's rate grid.lr {config['grid']['lr']} is not swept")
    for i, row in enumerate(config["grid"].get("lr_by_batch_size", [])):
        if row["lr"] not in lr["lrs"]:
            raise ConfigError(
                f"config error: lr_sweep.lrs: the grid's rate grid.lr_by_batch_size[{i}].lr {row['lr']} "
                f"(batch {row['batch_size']}) is not swept"
            )
    choice = lr.get("first_sweep_choice")
    if choice is not None and (choice not in lr["lrs"] or choice == min(lr["lrs"])):
        raise ConfigError(
            f"config error: lr_sweep.first_sweep_choice: {choice} is not one of lr_sweep.lrs above the lowest "
            "(the rates below it are the ones added after the first sweep)"
        )
