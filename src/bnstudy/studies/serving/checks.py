"""The serving study's config section against the grid and the test half: its check, run with the
config checks (``bnstudy.base.catalogue``)."""

from __future__ import annotations

import math

from bnstudy.base.config import ConfigError, Parts


def check(config: dict, part: Parts) -> None:
    """The served networks are grid networks; a served batch fits in the test half; the control's
    training rows are enough for a stream."""
    s = config["serving"]
    if s["normaliser"] not in config["normalisers"]:
        raise ConfigError(f"config error: serving.normaliser: {s['normaliser']} is not one of normalisers")
    for i, b in enumerate(s["train_batch_sizes"]):
        if b not in config["grid"]["batch_sizes"]:
            raise ConfigError(f"config error: serving.train_batch_sizes[{i}]: {b} is not one of grid.batch_sizes")
    if s["batch_size"] > part.test_rows:
        raise ConfigError(
            f"config error: serving.batch_size: {s['batch_size']} is larger than the test half ({part.test_source})"
        )
    # each class holds out floor(share * its rows), so at least this many rows are streamed
    streamed = part.test_rows - math.floor(s["held_out"] * part.test_rows)
    if s["batch_size"] > streamed:
        raise ConfigError(
            f"config error: serving.batch_size: {s['batch_size']} is larger than the streamed rows "
            f"({streamed} of {part.test_source} with serving.held_out {s['held_out']})"
        )
    # the control draws as many training rows per pass as the streams serve test rows (held out per class)
    served = sum(n - math.floor(s["held_out"] * n) for n in part.test_class_rows)
    if s.get("training_rows") and served > part.train_rows:
        raise ConfigError(
            f"config error: serving.training_rows: a stream serves {served} test rows, more than the "
            f"training rows ({part.train_source})"
        )
