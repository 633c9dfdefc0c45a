"""The training curves' figure (small fixed inputs)."""

from __future__ import annotations

import pandas as pd

from bnstudy.base import normalisers
from bnstudy.studies.curves.figure import curves


def curves_by_epoch():
    """:func:`bnstudy.studies.curves.report.by_epoch` rows: every registered normaliser, three batch
    sizes, ten epochs."""
    rows = []
    for k, name in enumerate(normalisers.NAMES):
        for b in (2, 32, 128):
            for e in range(1, 11):
                acc = 0.9 - 0.3 / e - 0.01 * k - 0.05 * (b == 2)
                rows.append(dict(normaliser=name, batch_size=b, epoch=e, seeds=3, loss=1 / e, train_accuracy=acc,
                                 validation_accuracy=acc))  # fmt: skip
    return pd.DataFrame(rows)


def figure(name):
    assert name == "curves", name
    return curves(curves_by_epoch())
