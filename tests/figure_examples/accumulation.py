"""Gradient accumulation's figure (small fixed inputs)."""

from __future__ import annotations

import pandas as pd

from bnstudy.studies.accumulation.figure import accumulation


def accumulation_cells(micro=(2, 4)):
    rows = []
    for m in micro:
        for i, config in enumerate(("large", "accumulate", "ghost", "small", "scaled")):
            for mode in ("inference", "recomputed", "training"):
                v = 0.97 - (0.1 / m) * (i > 0) - (0.2 if mode == "training" and i > 0 else 0.0)
                rows.append(dict(micro_batch=m, config=config, mode=mode, seeds=5, mean=v, sd=0.01))
    return pd.DataFrame(rows).assign(ci_low=lambda t: t["mean"] - 0.02, ci_high=lambda t: t["mean"] + 0.02)


def figure(name):
    assert name == "accumulation", name
    return accumulation(accumulation_cells(), 64)
