"""PreciseBN on a budget's figure (small fixed inputs)."""

from __future__ import annotations

import pandas as pd

from bnstudy.studies.precise_rows.figure import precise_rows


def precise_rows_cells():
    """:func:`bnstudy.studies.precise_rows.report.cells` rows of three batch sizes and two budgets."""
    rows = []
    for b in (2, 16, 64):
        for key, used, gap in (("ema", 0, -0.02), ("64", 64, -0.01), ("256", 256, -0.004), ("all", 896, 0.001)):
            rows.append(dict(batch_size=b, key=key, rows_used=used, gap=gap, ci_low=gap - 0.005, ci_high=gap + 0.005))
    return pd.DataFrame(rows)


def figure(name):
    assert name == "precise_rows", name
    return precise_rows(precise_rows_cells())
