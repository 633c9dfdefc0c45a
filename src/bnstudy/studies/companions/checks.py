"""Study 1's config section fits the data: probe batches in the test half, examples and one-class
batches in its smallest class (bnstudy.base.catalogue runs it with the config checks)."""

from __future__ import annotations

from bnstudy.base.config import ConfigError, Parts


def check(config: dict, part: Parts) -> None:
    c = config["companions"]
    if max(c["batch_sizes"]) > part.test_rows:
        raise ConfigError(
            f"config error: companions.batch_sizes: {max(c['batch_sizes'])} is larger than the test half "
            f"({part.test_source})"
        )
    pool = c.get("exact_companions")
    if pool is not None and pool > part.test_rows:
        raise ConfigError(
            f"config error: companions.exact_companions: {pool} exceeds the {part.test_rows} test rows "
            f"({part.test_source})"
        )
    grid = c.get("grid_batches_per_example")
    if grid is not None and grid > c["batches_per_example"]:
        raise ConfigError(
            f"config error: companions.grid_batches_per_example: {grid} exceeds companions.batches_per_example "
            f"({c['batches_per_example']}): the grid's networks are probed with the first of the batches drawn"
        )
    # Companion examples and one-class batches are drawn within one class of the
    # test half: an own-class batch holds the example and b - 1 other rows of its
    # class, an other-class batch b - 1 rows of another class.
    test_counts = list(part.test_class_rows)
    smallest = min(test_counts)
    digit = test_counts.index(smallest)
    for key in ("examples_per_class", "one_class_batch_size"):
        if c[key] > smallest:
            raise ConfigError(
                f"config error: companions.{key}: {c[key]} exceeds the {smallest} test rows of the "
                f"smallest class ({part.class_word} {digit}) at {part.test_source}"
            )
