"""Study 2's summary JSON by normaliser and batch size, without the networks' compiled code (the
summary rule loads this, not :mod:`.evaluation`). Its seed means are :mod:`bnstudy.evaluation.means`."""

from __future__ import annotations


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
