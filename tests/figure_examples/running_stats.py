"""Studies 3 and 5's figure: the running statistics' errors (small fixed inputs)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bnstudy.studies.running_stats.figure import running_stats


def shuffles_table(shuffles=3):
    """The shuffled pass repeated (shuffles.csv): the moving average, pooled statistics."""
    rows = []
    for s in range(shuffles):
        for b in (8, 32, 256):
            for est, k in (("ema", 0.9), ("pooled", np.nan), ("bias_corrected", 0.9)):
                rows.append(
                    dict(
                        order="shuffled",
                        batch_size=b,
                        estimator=est,
                        keep=k,
                        shuffle=s,
                        running_error=(0.1 + 0.01 * b) * (1 + 0.1 * s) if k == k else 0.0,
                        batch_estimate_error=2.0 / np.sqrt(b) * (1 + 0.05 * s),
                        train_eval_rmse=(0.3 + 0.005 * b) * (1 + 0.1 * s),
                    )
                )
    return pd.DataFrame(rows)


def passes_table(keeps=(0.5, 0.9, 0.99)):
    rows = []
    for order in ("shuffled", "sorted"):
        for b in (8, 32, 256):
            u = 512 // b
            for est, ks in (("ema", keeps), ("pooled", [np.nan]), ("bias_corrected", keeps)):
                for k in ks:
                    rows.append(
                        dict(
                            order=order,
                            batch_size=b,
                            estimator=est,
                            keep=k,
                            predicted_error=2.0 * (k**u if k == k else 0.0),
                            running_error=0.1 + 0.01 * b,
                            batch_estimate_error=2.0 / np.sqrt(b),
                            train_eval_rmse=0.3 + 0.005 * b * (2 if order == "sorted" else 1),
                        )
                    )
    return pd.DataFrame(rows)


def figure(name):
    assert name == "running_stats", name
    return running_stats(passes_table(), 0.9, shuffles_table())
