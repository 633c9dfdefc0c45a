"""The ramp study's config section against the grid: its check, run with the config checks
(``bnstudy.base.catalogue``)."""

from __future__ import annotations

from bnstudy.base.config import ConfigError, Parts
from bnstudy.studies.renorm_ramp.design import GRID, MILESTONES, settings

RESERVED = (GRID, "batchnorm")  # the names of the grid's two sides of the pairs


def check(config: dict, part: Parts) -> None:
    """The grid trains batch norm and batch renorm at every batch size and seed of the section (its
    networks are the other side of each pair); each variant has its own name, states all three
    milestones when they are absolute steps, and is not the grid's schedule."""
    s, grid = config["renorm_ramp"], config["grid"]
    missing = [n for n in ("batchnorm", "batchrenorm") if n not in config["normalisers"]]
    if missing:
        raise ConfigError(f"config error: renorm_ramp: the grid's normalisers do not include {', '.join(missing)}")
    stray = [b for b in s["batch_sizes"] if b not in grid["batch_sizes"]]
    if stray:
        raise ConfigError(f"config error: renorm_ramp.batch_sizes: {stray} not in grid.batch_sizes")
    stray = [x for x in s["seeds"] if x not in grid["seeds"]]
    if stray:
        raise ConfigError(
            f"config error: renorm_ramp.seeds: {stray} not in grid.seeds (each pairs with its grid networks)"
        )
    names = [v["name"] for v in s["schedules"]]
    for v in s["schedules"]:
        name = v["name"]
        if name in RESERVED or names.count(name) > 1:
            raise ConfigError(f"config error: renorm_ramp.schedules: {name!r} is taken (unique, not grid or batchnorm)")
        lacking = [k for k in MILESTONES if k not in v]
        if v.get("steps") == "absolute" and lacking:
            raise ConfigError(
                f"config error: renorm_ramp.schedules: {name}: absolute steps without {', '.join(lacking)}"
            )
        if settings(v, config["batchrenorm"]) == settings({}, config["batchrenorm"]):
            raise ConfigError(f"config error: renorm_ramp.schedules: {name} is the grid's own schedule (its networks')")
