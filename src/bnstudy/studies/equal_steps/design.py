"""The design of the equal-steps arms, in plain Python (the report and the cost model read it without
loading compiled code).

At the grid's epochs a network trained at the smallest batch size takes many more optimiser steps than
one at the largest (the digits' 898 training rows, 20 epochs: 8,980 steps at batch 2, 280 at batch 64).
An arm trains one of the two batch sizes for the other's number of steps, with the other's optimiser
and, in each step, the learning rate the other's grid network has in the same step (its rate and the
grid's schedule over its epochs), so that it differs from that grid network only in its batch size
(and so in the rows each step sees):

- ``smallest``: the smallest grid batch size for the largest's steps (fewer than its own: the batches
  of the first steps of its own grid network's run);
- ``largest``: the largest grid batch size for the smallest's steps (more than its own: the grid's
  seeded batch order continued over further epochs).
"""

from __future__ import annotations

from bnstudy.nets.recipe import steps_per_epoch

NORMALISERS = ("none", "batchnorm")  # batch norm and the network without a normaliser
ARMS = ("smallest", "largest")


def arm_batches(arm: str, batch_sizes) -> tuple[int, int]:
    """``(batch size trained, batch size whose steps it takes)`` of ``arm`` on a grid of ``batch_sizes``."""
    small, large = min(int(b) for b in batch_sizes), max(int(b) for b in batch_sizes)
    if arm == "smallest":
        return small, large
    if arm == "largest":
        return large, small
    raise ValueError(f"unknown arm {arm!r}; expected one of {ARMS}")


def arm_of(batch_size: int, batch_sizes) -> str:
    """The arm that trains at ``batch_size`` (the grid's smallest or largest)."""
    for arm in ARMS:
        if arm_batches(arm, batch_sizes)[0] == int(batch_size):
            return arm
    raise ValueError(f"batch size {batch_size} is neither the smallest nor the largest of {list(batch_sizes)}")


def grid_steps(rows: int, batch_size: int, epochs: int) -> int:
    """Optimiser steps of a grid network: ``epochs`` epochs of ``rows // batch_size`` batches (the
    leftover rows dropped)."""
    return int(epochs) * steps_per_epoch(int(rows), int(batch_size), "drop")
