"""PreciseBN on a budget's figure (small fixed inputs)."""

from __future__ import annotations

import pandas as pd

from bnstudy.studies.precise_rows.figure import precise_rows


def precise_rows_cells():
    """:func:`bnstudy.studies.precise_rows.report.adjusted` rows of three batch sizes and two budgets: the
    running averages' interval adjusted (wider), the budgets' not."""
    rows = []
    for b in (2, 16, 64):
        for key, used, gap in (("ema", 0, -0.02), ("64", 64, -0.01), ("256", 256, -0.004), ("all", 896, 0.001)):
            wide, family = (0.009, 3) if key == "ema" else (0.005, 1)
            rows.append(dict(batch_size=b, key=key, rows_used=used, gap=gap, ci_low=gap - 0.005, ci_high=gap + 0.005,
                             family=family, ci_low_adj=gap - wide, ci_high_adj=gap + wide))  # fmt: skip
    return pd.DataFrame(rows)


def figure(name):
    assert name == "precise_rows", name
    return precise_rows(precise_rows_cells())
