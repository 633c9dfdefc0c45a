"""The accumulation study's LaTeX table: each configuration's accuracy in every mode and, in inference
mode with the running and with the recomputed statistics, minus accumulation paired by seed (each
interval at the level of its declared family, as :func:`bnstudy.studies.accumulation.report.paired_table`
forms it)."""

from __future__ import annotations

import pandas as pd

from bnstudy.base.designs import ACCUMULATION_CONFIGS as CONFIGS
from bnstudy.paper.latex import points, points_interval, signed_points

MODES = ("inference", "recomputed", "training")  # the accuracy columns' order, and the study's modes


def config_label(config: str, batch_size: int, m: int) -> str:
    """A configuration in words (table rows, figure ticks)."""
    return {
        "large": f"batch {batch_size}",
        "accumulate": f"{batch_size // m} $\\times$ {m}, accumulated",
        "ghost": f"ghost, virtual {m}",
        "small": f"batch {m}",
        "scaled": f"batch {m}, rate $\\times$ {m}/{batch_size}",
    }[config]


def latex_table(cells: pd.DataFrame, paired: pd.DataFrame, batch_size: int, micro) -> tuple:
    """``(header, rows, align, comment)``: per micro-batch and configuration the test accuracy in
    every mode (mean $\\pm$ sd, points) and, in inference mode with the running and with the
    recomputed statistics, minus accumulation paired by seed."""
    cell = cells.set_index(["micro_batch", "config", "mode"])
    pair = paired.set_index(["micro_batch", "comparison", "mode"])
    rows = []
    for m in micro:
        for config in CONFIGS:
            row = [str(m), config_label(config, batch_size, m)]
            for mode in MODES:
                r = cell.loc[(m, config, mode)]
                row.append(f"{points(r['mean'])} $\\pm$ {points(r.sd)}")
            for mode in ("inference", "recomputed"):
                if config == "accumulate":
                    row.append("--")
                    continue
                name = {
                    "large": "accumulate_vs_large",
                    "small": "accumulate_vs_small",
                    "ghost": "ghost_vs_accumulate",
                    "scaled": "accumulate_vs_scaled",
                }
                r = pair.loc[(m, name[config], mode)]
                sign = 1 if config == "ghost" else -1  # the row's configuration minus accumulation
                lo, hi = sorted((sign * r.ci_low, sign * r.ci_high))
                row.append(f"${signed_points(sign * r.gain)}$ ${points_interval(lo, hi, signed=True)}$")
            rows.append(row)
    header = [
        "micro-batch",
        "training",
        "inference",
        "recomputed",
        "training mode",
        "$-$ accumulated (inference)",
        "$-$ accumulated (recomputed)",
    ]
    return header, rows, "rllllrr", "accuracy by configuration, and minus accumulation paired by seed"
