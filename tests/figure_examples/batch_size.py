"""Study 2's figures: accuracy by batch size and the remedies (small fixed inputs)."""

from __future__ import annotations

import pandas as pd

from bnstudy.base import normalisers
from bnstudy.studies.batch_size import figure as batch_size_figure


def batch_size_summary():
    rows = []
    for norm in normalisers.NAMES:
        modes = ["inference", "training"]
        if norm == "batchnorm":
            modes += ["debiased_ema", "cumulative", "precise_bn", "exact", "inference_keep"]
        for i, mode in enumerate(modes):
            for b in [2, 4, 8, 16, 32, 64]:
                v = 0.97 - (0.3 / b if norm in normalisers.BATCH_NAMES else 0.0) * (2 if mode == "training" else 1)
                v += 0.002 * i
                rows.append(dict(normaliser=norm, batch_size=b, mode=mode, seeds=3, mean=v, sd=0.01))
    return pd.DataFrame(rows).assign(ci_low=lambda t: t["mean"] - 0.01, ci_high=lambda t: t["mean"] + 0.01)


def gains_table(sizes=(2, 4, 8, 16, 32, 64)):
    """Paired comparisons as bnstudy.studies.batch_size.paired.summarise writes them (gains.csv)."""
    names = ["batchnorm_vs_none", "batchrenorm_vs_batchnorm", "layernorm_vs_batchnorm"]
    names += [f"{m}_vs_ema" for m in ("debiased_ema", "cumulative", "precise_bn", "exact")] + ["none_keep_vs_drop"]
    rows = [
        dict(comparison=c, batch_size=b, seeds=3, gain=0.001 * (i + 1) - 0.01 / b, sd=0.002)
        for i, c in enumerate(names)
        for b in sizes
    ]
    return pd.DataFrame(rows).assign(ci_low=lambda t: t["gain"] - 0.004, ci_high=lambda t: t["gain"] + 0.004)


def figure(name):
    draw = {"batch_size": batch_size_figure.batch_size, "batch_size_remedies": batch_size_figure.batch_size_remedies}
    return draw[name](batch_size_summary(), gains_table())
