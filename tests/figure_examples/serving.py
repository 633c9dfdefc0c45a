"""Serving's figure: accuracy along the streams (small fixed inputs)."""

from __future__ import annotations

import pandas as pd

from bnstudy.studies.serving.figure import serving


def along_table(sizes=(2, 16, 64), batches=56):
    rows = []
    for b in sizes:
        for stream in ("random", "sorted"):
            for p in range(batches):
                v = 0.9 - 0.1 / b if stream == "random" else 0.15 + 0.4 * (p % 6 == 5)
                rows.append(dict(train_batch_size=b, stream=stream, position=p, accuracy=v))
    return pd.DataFrame(rows)


def figure(name):
    assert name == "serving", name
    return serving(along_table(), 0.97)
