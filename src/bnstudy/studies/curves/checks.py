"""The training-curves study's config section against the grid and the data: its check, run with the
config checks (``bnstudy.base.catalogue``)."""

from __future__ import annotations

from bnstudy.base.config import ConfigError, Parts


def check(config: dict, part: Parts) -> None:
    """The curves need more grid epochs than ``last_epochs`` (on a data set with a validation split they
    score the validation accuracy, on the digits' halves the training loss and accuracy); each
    baseline's range is ordered."""
    s = config["curves"]
    grid = config["grid"]
    epochs = min([grid["epochs"], *(int(r["epochs"]) for r in grid.get("epochs_by_batch_size", []))])
    if s["last_epochs"] >= epochs:
        raise ConfigError(
            f"config error: curves.last_epochs: {s['last_epochs']} is not fewer than the grid's {epochs} epochs"
        )
    for i, b in enumerate(s.get("baselines", [])):
        if b["low"] > b["high"]:
            raise ConfigError(f"config error: curves.baselines[{i}]: low {b['low']} is above high {b['high']}")
