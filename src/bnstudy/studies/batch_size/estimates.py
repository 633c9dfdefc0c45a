"""Study 2's summary arithmetic without the networks' compiled code: the mean of values added in
order (a fixed-order kernel, the same bits on every CPU) and the summary JSON by normaliser and
batch size. :mod:`.evaluation` re-exports them; the summary rule loads only this of the two, so
editing a network kernel does not re-run it."""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT


@numba.njit(**JIT)
def _sum_and_squares(v):
    """Mean of ``v`` (summed in order) and the sum of squared deviations from it (in order)."""
    n = v.shape[0]
    s = 0.0
    for i in range(n):
        s += v[i]
    mean = s / n
    ss = 0.0
    for i in range(n):
        d = v[i] - mean
        ss += d * d
    return mean, ss


def mean_in_order(values) -> float:
    """Mean of ``values`` in float64, added in the order given, divided by their number."""
    v = np.ascontiguousarray(values, dtype=np.float64)
    if v.ndim != 1 or len(v) == 0:
        raise ValueError(f"mean_in_order needs a non-empty 1-D sequence, got shape {v.shape}")
    return float(_sum_and_squares(v)[0])


def summary_json(summary) -> dict:
    """``{normaliser: {batch_size: {...}}}`` from the per-(normaliser, b, mode) summary."""
    out: dict = {}
    for row in summary.itertuples(index=False):
        cell = out.setdefault(row.normaliser, {}).setdefault(str(int(row.batch_size)), {})
        key = {"inference": "inference", "training": "train_mode"}.get(row.mode, row.mode)
        cell[f"{key}_accuracy"] = row.mean
        cell[f"{key}_sd"] = row.sd
        cell[f"{key}_ci"] = [row.ci_low, row.ci_high]
        cell["seeds"] = int(row.seeds)
    return out
