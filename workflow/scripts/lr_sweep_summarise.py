"""Rule summarise_lr_sweep: chosen rates, test accuracy at them, paired differences, JSON, macros, tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd

from bnstudy.base import io, normalisers
from bnstudy.paper import latex
from bnstudy.studies.lr_sweep import report as lr_sweep_report

inp, out, p = snakemake.input, snakemake.output, snakemake.params
runs = pd.concat([io.read_table(f) for f in inp.runs], ignore_index=True)
split = io.read_table(inp.split)
if "fold" in split.columns:  # K folds: every row held out once per seed
    sizes = split["fold"].value_counts()
    design = {
        "folds": int(len(sizes)),
        "validation_rows": int(len(split)),
        "fold_rows_min": int(sizes.min()),
        "fold_rows_max": int(sizes.max()),
    }
else:
    design = {
        "fit_rows": int((split["subset"] == "fit").sum()),
        "validation_rows": int((split["subset"] == "validation").sum()),
    }
design |= {"epochs": p.epochs, "grid_seeds": p.grid_seeds}
labels = normalisers.labels()
result = lr_sweep_report.report(runs, p.grid_lr, p.confidence, labels, design, p.families)
for name in ("rates", "best", "paired"):
    io.write_table(out[name], result[name])
io.write_json(out.summary, result["summary"])
latex.write_macros(out.macros, result["macros"], "Learning rate against batch size")
for name, (header, rows, align, comment) in result["tables"].items():
    latex.write_table(out[name], header, rows, align, comment)
log.info("paired %s", result["paired"].to_dict("records"))
