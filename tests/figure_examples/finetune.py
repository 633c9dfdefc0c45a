"""Fine-tuning's figure (small fixed inputs)."""

from __future__ import annotations

import pandas as pd

from bnstudy.studies.finetune.figure import finetune


def finetune_table(rates=(1e-4, 1e-3), steps=(0, 25, 50, 300), seeds=None):
    """along_mean.csv's rows, or along.csv's (one per seed, a ``seed`` column) given ``seeds``."""
    if seeds is not None:
        mean = finetune_table(rates, steps)
        return pd.concat(
            [mean.assign(seed=s, inference_accuracy=mean.inference_accuracy - 0.002 * s) for s in seeds],
            ignore_index=True,
        )
    rows = []
    for lr in rates:
        for stream in ("shuffle", "class_sorted"):
            for mode in ("live", "frozen"):
                for k in steps:
                    acc = 0.97 - (0.01 if mode == "live" and k else 0.0) - 20 * lr * k / 300
                    var = 0.03 + (0.5 if mode == "live" and k else 0.001 * k * lr * 1e3)
                    rows.append(dict(lr=lr, stream=stream, mode=mode, step=k, inference_accuracy=acc, var_to_exact=var))
    return pd.DataFrame(rows)


def figure(name):
    assert name == "finetune", name
    start = {"inference_accuracy": 0.97, "var_to_exact": 0.03}
    return finetune(finetune_table(), start, networks=finetune_table(seeds=(0, 1, 2)))
