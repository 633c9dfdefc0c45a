"""The equal-steps study's config section against the grid: its check, run with the config checks
(``bnstudy.base.catalogue``)."""

from __future__ import annotations

from bnstudy.base.config import ConfigError, Parts
from bnstudy.studies.equal_steps.design import NORMALISERS


def check(config: dict, part: Parts) -> None:
    """The grid trains batch norm and no normaliser at two batch sizes or more, with its leftover rows
    dropped and Adam or SGD on whole batches (an arm repeats the grid's recipe, step by step); every
    seed of the section is a grid seed (its grid networks are the other side of each pair)."""
    s, grid = config["equal_steps"], config["grid"]
    missing = [n for n in NORMALISERS if n not in config["normalisers"]]
    if missing:
        raise ConfigError(f"config error: equal_steps: the grid's normalisers do not include {', '.join(missing)}")
    if len(set(grid["batch_sizes"])) < 2:
        raise ConfigError("config error: equal_steps: the grid has one batch size, no smallest and largest to compare")
    if grid["last_batch"] != "drop":
        raise ConfigError("config error: equal_steps: the arms take the grid's batches with the leftover rows dropped")
    stray = [x for x in s["seeds"] if x not in grid["seeds"]]
    if stray:
        raise ConfigError(
            f"config error: equal_steps.seeds: {stray} not in grid.seeds (each pairs with its grid network)"
        )
