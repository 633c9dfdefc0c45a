"""The learning-rate sweep's figure (small fixed inputs)."""

from __future__ import annotations

import pandas as pd

from bnstudy.studies.lr_sweep import report as lr_sweep_report


def lr_sweep_figure():
    from bnstudy.studies.lr_sweep import figure as figures_lr_sweep

    rows = [
        dict(normaliser=n, batch_size=b, lr=lr, seed=s, validation_accuracy=0.9 + 0.01 * s - lr, test_accuracy=0.9 - lr)
        | {"final_loss": 0.1}
        for n in ("none", "batchnorm")
        for b in (2, 8, 64)
        for lr in (1e-4, 1e-3, 1e-2)
        for s in range(3)
    ]
    rates = lr_sweep_report.rate_table(pd.DataFrame(rows), 0.95)
    return figures_lr_sweep.lr_sweep(lr_sweep_report.best_rates(rates), rates, 1e-3)


def figure(name):
    assert name == "lr_sweep", name
    return lr_sweep_figure()
