"""The grid's rate as the sweep's reference: one rate, or one per batch size (``grid.lr_by_batch_size``).
Pure pandas, so the sweep's figure reads it without loading compiled code."""

from __future__ import annotations

import pandas as pd


def at_rate(rates: pd.DataFrame, lr) -> pd.DataFrame:
    """The rows of the sweep's rate table at the grid's rate, for reference: one rate, or a mapping of
    batch size (as text) to the rate the grid trains at it."""
    if isinstance(lr, dict):
        wanted = rates.batch_size.map(lambda b: float(lr[str(int(b))]))
        return rates[rates.lr == wanted].reset_index(drop=True)
    return rates[rates.lr == float(lr)].reset_index(drop=True)
